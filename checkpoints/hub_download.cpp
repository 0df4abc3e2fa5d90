#include "checkpoints/hub_download.h"

#include <curl/curl.h>

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "checkpoints/checkpoint.h"
#include "checkpoints/hub_cache.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/sha256.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

bool env_true(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s = v;
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

using CurlPtr = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using SlistPtr = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

CurlPtr new_handle(const HubOptions& o) {
  static CurlGlobal global;
  CurlPtr h(curl_easy_init(), curl_easy_cleanup);
  KILN_CHECK(h, "[hub] libcurl init failed");
  curl_easy_setopt(h.get(), CURLOPT_USERAGENT, "kiln/" KILN_VERSION);
  curl_easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT, 30L);
  // Abort a transfer that moves under 1 byte/s for timeout_s; the caller resumes it.
  curl_easy_setopt(h.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h.get(), CURLOPT_LOW_SPEED_TIME, o.timeout_s);
  curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  return h;
}

SlistPtr auth_headers(const HubOptions& o) {
  curl_slist* list = curl_slist_append(nullptr, "Accept-Encoding: identity");
  if (!o.token.empty()) list = curl_slist_append(list, ("Authorization: Bearer " + o.token).c_str());
  return SlistPtr(list, curl_slist_free_all);
}

std::string file_url(const HubOptions& o, const std::string& repo, const std::string& revision,
                     const std::string& file) {
  std::string base = o.endpoint;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + repo + "/resolve/" + revision + "/" + file;
}

size_t collect_headers(char* buf, size_t size, size_t n, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string line(buf, size * n);
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string key = line.substr(0, colon);
    std::transform(key.begin(), key.end(), key.begin(), ::tolower);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r\n") + 1);
    (*headers)[key] = value;
  }
  return size * n;
}

struct FileMeta {
  std::string commit, etag;
  int64_t size = -1;
};

std::string clean_etag(std::string e) {
  if (e.starts_with("W/")) e = e.substr(2);
  e.erase(std::remove(e.begin(), e.end(), '"'), e.end());
  return e;
}

// HEAD without following redirects: the Hub's own response carries the commit and the etag.
// Returns false for 404 (the file does not exist at that revision).
bool head(const HubOptions& o, const std::string& repo, const std::string& revision, const std::string& file,
          FileMeta& meta) {
  auto h = new_handle(o);
  auto hdrs = auth_headers(o);
  std::map<std::string, std::string> headers;
  std::string url = file_url(o, repo, revision, file);
  curl_easy_setopt(h.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(h.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, hdrs.get());
  curl_easy_setopt(h.get(), CURLOPT_HEADERFUNCTION, collect_headers);
  curl_easy_setopt(h.get(), CURLOPT_HEADERDATA, &headers);
  CURLcode rc = curl_easy_perform(h.get());
  KILN_CHECK(rc == CURLE_OK, "[hub] cannot reach {}: {}", url, curl_easy_strerror(rc));
  long status = 0;
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status == 404) return false;
  KILN_CHECK(status != 401 && status != 403,
             "[hub] {}: access denied (HTTP {}); set HF_TOKEN for gated or private models", url, status);
  KILN_CHECK(status == 200 || (status >= 300 && status < 400), "[hub] {}: HTTP {}", url, status);
  meta.commit = headers.count("x-repo-commit") ? headers["x-repo-commit"] : (is_commit_hash(revision) ? revision : "");
  KILN_CHECK(is_commit_hash(meta.commit), "[hub] {}: the server did not say which commit it serves", url);
  meta.etag = clean_etag(headers.count("x-linked-etag") ? headers["x-linked-etag"] : headers["etag"]);
  KILN_CHECK(!meta.etag.empty() && meta.etag.find('/') == std::string::npos && meta.etag != "." && meta.etag != "..",
             "[hub] {}: no usable ETag", url);
  std::string size = headers.count("x-linked-size") ? headers["x-linked-size"] : headers["content-length"];
  if (!size.empty()) meta.size = std::strtoll(size.c_str(), nullptr, 10);
  return true;
}

struct Transfer {
  FILE* out = nullptr;
  ProgressBar* bar = nullptr;
  int64_t base = 0;
  long status = 0;
  bool status_checked = false;
  CURL* handle = nullptr;
};

size_t write_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->status_checked) {
    curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &t->status);
    t->status_checked = true;
    // A 200 to a ranged request means the server ignored the range: start the file over.
    if (t->status == 200 && t->base > 0) {
      if (std::fseek(t->out, 0, SEEK_SET) != 0 || ::ftruncate(fileno(t->out), 0) != 0) return 0;
      t->base = 0;
    }
  }
  if (t->status != 200 && t->status != 206) return size * n;  // error bodies are discarded
  return std::fwrite(data, size, n, t->out) * size;
}

int on_progress(void* user, curl_off_t, curl_off_t now, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->bar) t->bar->update(static_cast<uint64_t>(t->base + now));
  return 0;
}

// Downloads into `partial`, resuming from its current size, retrying on broken transfers.
void download_blob(const HubOptions& o, const std::string& url, const std::string& partial, const FileMeta& meta,
                   const std::string& label) {
  ProgressBar bar(label, meta.size > 0 ? static_cast<uint64_t>(meta.size) : 0, true);
  std::string last_error;
  for (int attempt = 1; attempt <= o.max_attempts; ++attempt) {
    int64_t have = fs::exists(partial) ? static_cast<int64_t>(fs::file_size(partial)) : 0;
    if (meta.size >= 0 && have == meta.size) return;
    if (meta.size >= 0 && have > meta.size) {
      fs::remove(partial);
      have = 0;
    }
    FILE* out = std::fopen(partial.c_str(), have > 0 ? "r+b" : "wb");
    KILN_CHECK(out, "[hub] cannot write {}", partial);
    std::fseek(out, 0, SEEK_END);
    auto h = new_handle(o);
    auto hdrs = auth_headers(o);
    Transfer t{out, &bar, have, 0, false, h.get()};
    curl_easy_setopt(h.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(h.get(), CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, hdrs.get());
    curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(h.get(), CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h.get(), CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h.get(), CURLOPT_XFERINFODATA, &t);
    std::string range = std::to_string(have) + "-";
    if (have > 0) curl_easy_setopt(h.get(), CURLOPT_RANGE, range.c_str());
    CURLcode rc = curl_easy_perform(h.get());
    std::fclose(out);
    long status = 0;
    curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
    if (rc == CURLE_OK && (status == 200 || status == 206)) {
      if (meta.size < 0 || static_cast<int64_t>(fs::file_size(partial)) == meta.size) return;
      last_error = "size mismatch after transfer";
      continue;
    }
    KILN_CHECK(status != 401 && status != 403 && status != 404, "[hub] {}: HTTP {}", url, status);
    last_error = rc != CURLE_OK ? curl_easy_strerror(rc) : "HTTP " + std::to_string(status);
  }
  fail("[hub] {}: download failed after {} attempts: {}", url, o.max_attempts, last_error);
}

class HubFetcher {
 public:
  HubFetcher(const HubOptions& o, const std::string& repo, const std::string& revision)
      : o_(o), repo_(repo), revision_(revision), repo_dir_(fs::path(o.cache_dir) / hub_repo_folder(repo)) {}

  // Fetches one file into the cache; false if the repository has no such file.
  bool fetch(const std::string& file) {
    FileMeta meta;
    if (!head(o_, repo_, revision_, file, meta)) return false;
    KILN_CHECK(commit_.empty() || commit_ == meta.commit, "[hub] {}: the revision moved while downloading", repo_);
    commit_ = meta.commit;
    fs::path blob = repo_dir_ / "blobs" / meta.etag;
    fs::create_directories(blob.parent_path());
    if (!fs::exists(blob)) {
      std::string partial = blob.string() + ".incomplete";
      download_blob(o_, file_url(o_, repo_, commit_, file), partial, meta, file);
      // LFS files are named by their sha256; verify it (git blobs are named by a sha1 of a header).
      if (meta.etag.size() == 64 && std::all_of(meta.etag.begin(), meta.etag.end(), ::isxdigit)) {
        std::string got = sha256_file_hex(partial);
        if (got != meta.etag) {
          fs::remove(partial);
          fail("[hub] {}/{}: checksum mismatch (expected sha256 {}, got {}); the download was discarded", repo_, file,
               meta.etag, got);
        }
      }
      fs::rename(partial, blob);
    }
    fs::path link = repo_dir_ / "snapshots" / commit_ / file;
    fs::create_directories(link.parent_path());
    if (!fs::exists(link)) {
      std::error_code ec;
      fs::remove(link, ec);  // a dangling link
      fs::create_symlink(fs::path("..") / ".." / "blobs" / meta.etag, link);
    }
    return true;
  }

  std::string finish() {
    if (!is_commit_hash(revision_)) {
      fs::create_directories(repo_dir_ / "refs" / fs::path(revision_).parent_path());
      std::ofstream(repo_dir_ / "refs" / revision_) << commit_;
    }
    return (repo_dir_ / "snapshots" / commit_).string();
  }

 private:
  const HubOptions& o_;
  std::string repo_, revision_, commit_;
  fs::path repo_dir_;
};

}  // namespace

HubOptions hub_options_from_env() {
  HubOptions o;
  if (const char* v = std::getenv("HF_ENDPOINT"); v && *v) o.endpoint = v;
  if (const char* v = std::getenv("HF_TOKEN"); v && *v) o.token = v;
  o.offline = env_true("HF_HUB_OFFLINE");
  o.cache_dir = hub_cache_dir();
  return o;
}

std::string fetch_snapshot(const std::string& repo_id, const std::string& rev, const HubOptions& o) {
  const std::string revision = rev.empty() ? "main" : rev;
  KILN_CHECK(is_hub_id(repo_id), "[hub] '{}' is not a valid Hub model id", repo_id);
  KILN_CHECK(revision.find("..") == std::string::npos && revision.front() != '/', "[hub] bad revision '{}'", revision);
  auto cached = cached_snapshot(o.cache_dir, repo_id, revision);
  if (o.offline) {
    KILN_CHECK(cached.has_value(), "[hub] {}@{} is not in the Hugging Face cache ({}) and HF_HUB_OFFLINE is set",
               repo_id, revision, o.cache_dir);
    return *cached;
  }
  try {
    HubFetcher f(o, repo_id, revision);
    KILN_CHECK(f.fetch("config.json"), "[hub] {}@{}: no config.json; is this a model repository?", repo_id, revision);
    // Settings and tokenizer files the families read, where the repository has them.
    for (const char* optional : {"generation_config.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                                 "source.spm", "target.spm", "target_vocab.json"})
      f.fetch(optional);
    // Weights: safetensors as transformers prefers them, else torch.save files; whole or sharded.
    bool found = false;
    for (const auto& [single, index_name] : {std::pair{"model.safetensors", "model.safetensors.index.json"},
                                             std::pair{"pytorch_model.bin", "pytorch_model.bin.index.json"}}) {
      if (found || f.fetch(single)) {
        found = true;
        continue;
      }
      if (!f.fetch(index_name)) continue;
      found = true;
      std::string snap = f.finish();
      auto index = read_json_file(snap + "/" + index_name, "hub");
      std::set<std::string> shards;
      const nlohmann::json weight_map =
          index.is_object() ? index.value("weight_map", nlohmann::json::object()) : nlohmann::json::object();
      for (auto& [tensor, file] : weight_map.items())
        if (file.is_string()) shards.insert(file.get<std::string>());
      for (const auto& s : shards) {
        KILN_CHECK(s.find('/') == std::string::npos && s != "..", "[hub] shard name '{}' is not a plain file name", s);
        KILN_CHECK(f.fetch(s), "[hub] {}: shard {} listed in the index is missing", repo_id, s);
      }
    }
    KILN_CHECK(found, "[hub] {}@{} has no weights (safetensors or pytorch_model.bin)", repo_id, revision);
    return f.finish();
  } catch (const Error& e) {
    // As huggingface_hub does: if the Hub cannot be reached, a cached snapshot still serves.
    if (cached && std::string(e.what()).find("cannot reach") != std::string::npos) {
      std::fprintf(stderr, "kiln: warning: %s; using the cached snapshot\n", e.what());
      return *cached;
    }
    throw;
  }
}

}  // namespace kiln
