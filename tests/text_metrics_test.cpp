// Corpus BLEU and chrF against sacreBLEU. Two kinds of expected values:
//  - values from sacreBLEU's own tests and README (file named at each), checked at the tolerance
//    those tests use;
//  - values printed by sacreBLEU 2.4.3 with its defaults (BLEU(), CHRF(), corpus_score) for inputs
//    chosen here, checked to the last bits (EXPECT_DOUBLE_EQ), since the port keeps its arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "tasks/text/text_metrics.h"

namespace kiln {
namespace {

using Lines = std::vector<std::string>;

// sacreBLEU's README example, also _hyps/_refs in test/test_bleu.py: two reference streams.
const Lines kHyps = {"The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."};
const std::vector<Lines> kRefStreams = {
    {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
    {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."},
};

// test/test_sentence_bleu.py (an example from a sacreBLEU bug report): Romanian with a
// cedilla/comma-below mismatch and a mixed-case first word.
const std::string kRoRef = "producţia de zahăr brut se exprimă în zahăr alb;";
const std::string kRoSys = "Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;";

// test/test_chrf.py, test_sentence_level_chrf: Czech hypotheses and references.
const Lines kCzHyps = {
    "Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře.",
    "Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři.",
    "Lapali po dechu, jejich životy skončily dřív, než skutečně začaly.",
};
const Lines kCzRefs = {
    "Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře.",
    "A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři.",
    "Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli.",
};

// test/test_chrf.py, test_cases: German with umlauts and irregular spacing.
const std::string kDeHyp = " Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. ";
const std::string kDeRef = "Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich.";

const std::string kRuHyp = "Кошка сидит на ковре, а собака — во дворе.";
const std::string kRuRef = "Кошка сидела на ковре, а собака спала во дворе.";

constexpr const char* kBleuSignature = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3";
constexpr const char* kChrfSignature = "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.4.3";

TEST(CorpusBleu, ReadmeExampleWithTwoReferences) {
  const BleuScore s = corpus_bleu_multi_ref(kHyps, kRefStreams);
  // test/test_bleu.py, test_corpus_bleu_cases (default settings), EPSILON = 1e-8.
  EXPECT_NEAR(s.score, 48.530827, 1e-8);
  // README: "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)";
  // the full-precision values are sacreBLEU 2.4.3's.
  ASSERT_EQ(s.precisions.size(), 4u);
  EXPECT_DOUBLE_EQ(s.score, 48.530827009929865);
  EXPECT_DOUBLE_EQ(s.precisions[0], 82.3529411764706);
  EXPECT_DOUBLE_EQ(s.precisions[1], 50.0);
  EXPECT_DOUBLE_EQ(s.precisions[2], 45.45454545454545);
  EXPECT_DOUBLE_EQ(s.precisions[3], 37.5);
  EXPECT_DOUBLE_EQ(s.bp, 0.9428731438548749);
  EXPECT_DOUBLE_EQ(s.sys_len_ratio, 17.0 / 18.0);
  EXPECT_EQ(s.sys_len, 17);
  EXPECT_EQ(s.ref_len, 18);
  EXPECT_EQ(s.signature, "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3");
}

TEST(CorpusBleu, EmptyHypothesesCountAsSegments) {
  // test/test_bleu.py, test_corpus_bleu_cases: ('', '', '') against the README references is 0.
  const BleuScore s = corpus_bleu_multi_ref({"", "", ""}, kRefStreams);
  EXPECT_NEAR(s.score, 0.0, 1e-8);
  EXPECT_EQ(s.sys_len, 0);
  EXPECT_EQ(s.ref_len, 17);  // the shorter reference on each length tie
  EXPECT_EQ(s.bp, 0.0);

  // Some empty lines among others still add their references' length (sacreBLEU 2.4.3 values).
  const BleuScore mixed = corpus_bleu({"", "It wasn't surprising.", ""}, kRefStreams[0]);
  EXPECT_DOUBLE_EQ(mixed.score, 0.736550669835346);
  EXPECT_DOUBLE_EQ(mixed.bp, 0.03877420783172201);
  EXPECT_EQ(mixed.sys_len, 4);
  EXPECT_EQ(mixed.ref_len, 17);
}

TEST(CorpusBleu, SingleReferenceStream) {
  const BleuScore s = corpus_bleu(kHyps, kRefStreams[0]);
  EXPECT_DOUBLE_EQ(s.score, 45.06750632106114);  // sacreBLEU 2.4.3
  EXPECT_EQ(s.sys_len, 17);
  EXPECT_EQ(s.ref_len, 17);
  EXPECT_EQ(s.signature, kBleuSignature);
}

TEST(CorpusBleu, SentenceBleuExamples) {
  // test/test_sentence_bleu.py ('exp', 13a): 8.493 at EPSILON = 1e-3. That test turns effective
  // order on, which changes nothing here because the hypothesis has n-grams of every order.
  const BleuScore s = corpus_bleu({kRoSys}, {kRoRef});
  EXPECT_NEAR(s.score, 8.493, 1e-3);
  EXPECT_DOUBLE_EQ(s.score, 8.493098745313148);  // sacreBLEU 2.4.3
  EXPECT_DOUBLE_EQ(s.precisions[3], 2.272727272727273);
  EXPECT_EQ(s.sys_len, 14);
  EXPECT_EQ(s.ref_len, 10);
  // test/test_sentence_bleu.py, test_cases_zero_bleu: no match at all is 0, not a smoothed value.
  EXPECT_EQ(corpus_bleu({"this is a cat"}, {"okay thanks"}).score, 0.0);
}

TEST(CorpusBleu, IdenticalCorpusIs100) {
  const BleuScore s = corpus_bleu(kHyps, kHyps);
  EXPECT_NEAR(s.score, 100.0, 1e-9);
  for (double p : s.precisions) EXPECT_DOUBLE_EQ(p, 100.0);
  EXPECT_EQ(s.bp, 1.0);
  EXPECT_EQ(s.sys_len_ratio, 1.0);
}

TEST(CorpusBleu, HandComputed) {
  // Matches 5/6, 3/5, 2/4, 1/3 (the second "the" is clipped by the reference's single one).
  const BleuScore s = corpus_bleu({"the cat sat on the mat"}, {"the cat sat on a mat"});
  EXPECT_NEAR(s.score, 100.0 * std::pow(5.0 / 6 * 3.0 / 5 * 2.0 / 4 * 1.0 / 3, 0.25), 1e-10);
  EXPECT_NEAR(s.precisions[0], 500.0 / 6, 1e-12);

  // No 4-gram matches: "exp" smoothing gives the first such order 100 / (2 * 1 n-gram).
  const BleuScore smoothed = corpus_bleu({"a b c d"}, {"a b c e"});
  EXPECT_DOUBLE_EQ(smoothed.precisions[3], 50.0);
  EXPECT_NEAR(smoothed.score, 100.0 * std::pow(0.75 * 2.0 / 3 * 0.5 * 0.5, 0.25), 1e-10);

  // A hypothesis shorter than its reference: BP = exp(1 - 4/2).
  const BleuScore brief = corpus_bleu({"a b"}, {"a b c d"});
  EXPECT_NEAR(brief.bp, std::exp(-1.0), 1e-15);
  EXPECT_EQ(brief.score, 0.0);  // no 3- or 4-grams: those precisions stay 0
}

TEST(CorpusBleu, Tokenizer13a) {
  // Raw line -> 13a tokens as sacreBLEU 2.4.3 produces them (each tokenized line tokenizes to
  // itself, so it can serve as the reference).
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"He said &quot;hi&quot; &amp; left.", "He said \" hi \" & left ."},
      {"It costs $1,000.50 today, right?", "It costs $ 1,000.50 today , right ?"},
      {"pages 5-6 and well-known (see p.3).", "pages 5 - 6 and well-known ( see p . 3 ) ."},
      {"<skipped> text &lt;b&gt; and &amp;quot;", "text < b > and & quot ;"},
      {".start end. a..b 3.14,2 x,y 1.a a.1", ". start end . a . . b 3.14,2 x , y 1 . a a . 1"},
      {"it's rock'n'roll, isn't it?", "it's rock'n'roll , isn't it ?"},
      {"foo-\nbar trailing-\n", "foobar trailing-"},
      {"a\u00a0b\u3000c\u2009d e\x1c"
       "f",
       "a b c d e f"},
      {"{x}|[y]^_`~ @home #tag 50% a+b=c", "{ x } | [ y ] ^ _ ` ~ @ home # tag 50 % a + b = c"},
      {"1-2-3 --x 7--8", "1 - 2 - 3 --x 7 - -8"},
      {"<skip<skipped>ped> x", "< skipped > x"},
      {" \t a.\u00a0\u00a0", "a ."},
      {"It was 2019.", "It was 2019 ."},  // needs the padding after the line
      {".5 and ,7 or 8,", ". 5 and , 7 or 8 ,"},
  };
  Lines raw, tokenized;
  for (const auto& [line, tokens] : cases) {
    const BleuScore s = corpus_bleu({line}, {tokens});
    EXPECT_EQ(s.sys_len, s.ref_len) << line;
    EXPECT_DOUBLE_EQ(s.precisions[0], 100.0) << line;
    raw.push_back(line);
    tokenized.push_back(tokens);
  }
  // Over the corpus every order has n-grams, so 100 also pins the token order.
  const BleuScore all = corpus_bleu(raw, tokenized);
  EXPECT_NEAR(all.score, 100.0, 1e-9);
  EXPECT_EQ(all.sys_len, 118);
}

TEST(CorpusBleu, Utf8Text) {
  // sacreBLEU 2.4.3 values.
  const BleuScore cz = corpus_bleu(kCzHyps, kCzRefs);
  EXPECT_DOUBLE_EQ(cz.score, 24.66242872148067);
  EXPECT_DOUBLE_EQ(cz.bp, 0.8302349785034864);
  EXPECT_EQ(cz.sys_len, 43);
  EXPECT_EQ(cz.ref_len, 51);
  EXPECT_DOUBLE_EQ(corpus_bleu({kDeHyp}, {kDeRef}).score, 24.384183193426086);
  EXPECT_DOUBLE_EQ(corpus_bleu({kRuHyp}, {kRuRef}).score, 48.326978309062206);
}

TEST(CorpusChrf, SacrebleuEffectiveOrderCases) {
  // test/test_chrf.py, test_cases_effective_order, EPSILON = 1e-4. That test uses beta 3; in each
  // case precision equals recall at every order, so the score is the same at the default beta 2.
  struct Case {
    Lines hyps, refs;
    double expected;
  };
  const std::vector<Case> cases = {
      {{"a"}, {"a"}, 100.0}, {{""}, {"reference"}, 0.0},     {{"a b c"}, {"a b c"}, 100.0}, {{"a b c"}, {"abc"}, 100.0},
      {{""}, {"c"}, 0.0},    {{"a", "b"}, {"a", "c"}, 50.0}, {{"aa"}, {"ab"}, 25.0},
  };
  for (const Case& c : cases) EXPECT_NEAR(corpus_chrf(c.hyps, c.refs).score, c.expected, 1e-4) << c.hyps[0];
}

TEST(CorpusChrf, ReadmeExampleWithTwoReferences) {
  // README: "chrF2 = 59.73"; full precision from sacreBLEU 2.4.3.
  const ChrfScore s = corpus_chrf_multi_ref(kHyps, kRefStreams);
  EXPECT_NEAR(s.score, 59.73, 0.005);
  EXPECT_DOUBLE_EQ(s.score, 59.72751782684763);
  EXPECT_EQ(s.signature, "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.4.3");
  EXPECT_DOUBLE_EQ(corpus_chrf(kHyps, kRefStreams[0]).score, 50.043063606582294);
}

TEST(CorpusChrf, CountsCodePoints) {
  // Per order (u b e r vs ü b e r): 3/4, 2/3, 1/2, 0/1 with precision = recall; orders 5 and 6
  // have no reference n-grams and are left out, so chrF = (3/4 + 2/3 + 1/2 + 0) / 4 = 23/48.
  // Counting bytes would see five characters in "über".
  EXPECT_NEAR(corpus_chrf({"über"}, {"uber"}).score, 100.0 * 23 / 48, 1e-12);
  // sacreBLEU 2.4.3 values (the Czech and German inputs come from test/test_chrf.py, which checks
  // them under other settings).
  EXPECT_DOUBLE_EQ(corpus_chrf(kCzHyps, kCzRefs).score, 43.03622941164886);
  EXPECT_DOUBLE_EQ(corpus_chrf({kDeHyp}, {kDeRef}).score, 64.818123726097);
  EXPECT_DOUBLE_EQ(corpus_chrf({kRuHyp}, {kRuRef}).score, 65.65441070835149);
  EXPECT_DOUBLE_EQ(corpus_chrf({kRoSys}, {kRoRef}).score, 46.16121170087866);
}

TEST(CorpusChrf, IgnoresUnicodeWhitespace) { EXPECT_DOUBLE_EQ(corpus_chrf({"a\u00a0b\u3000c"}, {"abc"}).score, 100.0); }

TEST(CorpusChrf, HandComputed) {
  // Order 1: precision 2/2, recall 2/3; order 2: 1/1, 1/2; no hypothesis 3-grams. Averages
  // P = 1, R = 7/12; F2 = 5PR / (4P + R) = 7/11.
  EXPECT_NEAR(corpus_chrf({"ab"}, {"abc"}).score, 700.0 / 11, 1e-10);

  // "ab" has no 3-grams, so the 3-gram of "abc" is not counted: over the corpus order 1 has
  // P = 5/6, R = 1; order 2 P = 3/4, R = 1; order 3 P = R = 1. F2 = 5PR / (4P + R) = 155/160.
  const ChrfScore corpus = corpus_chrf({"abc", "xyz"}, {"ab", "xyz"});
  EXPECT_NEAR(corpus.score, 96.875, 1e-10);
  EXPECT_DOUBLE_EQ(corpus.score, 96.87499999999999);  // sacreBLEU 2.4.3
}

TEST(CorpusChrf, IdenticalAndEmptyLines) {
  const ChrfScore s = corpus_chrf(kHyps, kHyps);
  EXPECT_DOUBLE_EQ(s.score, 100.0);
  EXPECT_EQ(s.signature, kChrfSignature);
  EXPECT_EQ(corpus_chrf({"", "", ""}, kRefStreams[0]).score, 0.0);
  EXPECT_DOUBLE_EQ(corpus_chrf({"", "It wasn't surprising.", ""}, kRefStreams[0]).score, 10.24082511548295);
}

TEST(TextMetrics, RejectsMismatchedOrEmptyCorpora) {
  EXPECT_THROW(corpus_bleu({"a", "b"}, {"a"}), Error);
  EXPECT_THROW(corpus_chrf({"a"}, {"a", "b"}), Error);
  EXPECT_THROW(corpus_bleu({}, {}), Error);
  EXPECT_THROW(corpus_chrf({}, {}), Error);
  EXPECT_THROW(corpus_bleu_multi_ref(kHyps, {kRefStreams[0], {"one line"}}), Error);
  EXPECT_THROW(corpus_chrf_multi_ref(kHyps, {}), Error);
}

TEST(TextMetrics, RejectsInvalidUtf8) {
  const Lines bad = {
      "\x80",              // continuation byte without a lead
      "\xC0\xAF",          // overlong "/"
      "caf\xC3",           // truncated sequence
      "\xED\xA0\x80",      // UTF-16 surrogate
      "\xF4\x90\x80\x80",  // past U+10FFFF
      "\xFF",
  };
  for (const std::string& line : bad) {
    EXPECT_THROW(corpus_bleu({"ok", line}, {"ok", "ok"}), Error);
    EXPECT_THROW(corpus_chrf({"ok", "ok"}, {"ok", line}), Error);
  }
  try {
    corpus_bleu({"ok", "\xFF"}, {"ok", "ok"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[bleu] hypothesis line 2 is not valid UTF-8");
  }
}

}  // namespace
}  // namespace kiln
