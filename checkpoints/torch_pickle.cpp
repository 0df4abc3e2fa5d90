#include "checkpoints/torch_pickle.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/half.h"

namespace kiln {

namespace {

// torch.save's data.pkl for a state dict takes a few hundred bytes per tensor and nests three
// MARKs deep. These bounds are far above that and keep hostile input to bounded memory.
constexpr uint64_t kMaxPickleBytes = 64ull << 20;
constexpr size_t kMaxStack = 1 << 16;  // values on the unpickler's stack (SETITEMS batches 1000 items)
constexpr size_t kMaxMarks = 64;       // MARKs open at once
constexpr size_t kMaxCells = 1 << 20;  // objects, memo entries and container elements, together
constexpr size_t kMaxDims = 8;
constexpr size_t kMaxGlobalLine = 256;
// An expanded view (zero strides) may have more elements than its storage; this bounds what
// converting one such tensor allocates. Other tensors are bounded by their storage's size.
constexpr uint64_t kMaxBroadcast = 1 << 20;

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Names and keys from the file, made safe to put in a one-line message.
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 120)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  if (s.size() > 120) out += "...";
  return out;
}

// Reads fields in order from untrusted bytes; running past the end is an error naming `what`.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, const std::string& file, const char* what)
      : bytes_(bytes), file_(file), what_(what) {}
  std::span<const uint8_t> take(uint64_t n) {
    KILN_CHECK(n <= remaining(), "[torch] {}: {} is truncated", file_, what_);
    auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t uint(int n) { return le(take(n).data(), n); }
  uint8_t byte() { return take(1)[0]; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& file_;
  const char* what_;
  size_t pos_ = 0;
};

// ---- The zip container. torch.save writes every record uncompressed (STORED) and 64-byte
// aligned, so records are read in place; the central directory is parsed here rather than through
// a streaming archive reader, which would copy them.

using Records = std::map<std::string, std::span<const uint8_t>>;

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEndRecord = 0x06054b50,
                   kEnd64Record = 0x06064b50, kEnd64Locator = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30, kCentralHeaderSize = 46, kEndRecordSize = 22, kEnd64LocatorSize = 20,
                 kEnd64RecordSize = 56;
constexpr uint64_t kZip64Marker = 0xffffffff;

struct CentralDirectory {
  uint64_t offset, size, entries;
  uint64_t end;  // where the end records start: the directory and every record lie before it
};

// The end-of-central-directory record is the last thing in a zip but for a comment of at most
// 64 KiB. torch writes zip64 end records too; where present their 64-bit fields are the truth.
CentralDirectory find_central_directory(std::span<const uint8_t> bytes, const std::string& file) {
  KILN_CHECK(bytes.size() >= kEndRecordSize, "[torch] {}: {} bytes is too short for a zip archive", file, bytes.size());
  const size_t last = bytes.size() - kEndRecordSize;
  const size_t first = last > 0xffff ? last - 0xffff : 0;
  size_t at = last + 1;
  for (size_t p = last + 1; p-- > first;) {
    if (le(&bytes[p], 4) == kEndRecord && le(&bytes[p + 20], 2) == last - p) {
      at = p;
      break;
    }
  }
  KILN_CHECK(at <= last, "[torch] {}: no zip end-of-central-directory record; the file is truncated", file);
  const uint8_t* e = &bytes[at];
  CentralDirectory cd{le(e + 16, 4), le(e + 12, 4), le(e + 10, 2), at};
  if (at >= kEnd64LocatorSize && le(&bytes[at - kEnd64LocatorSize], 4) == kEnd64Locator) {
    const uint64_t locator = at - kEnd64LocatorSize;
    const uint64_t record = le(&bytes[locator + 8], 8);
    KILN_CHECK(record <= locator && locator - record >= kEnd64RecordSize && le(&bytes[record], 4) == kEnd64Record,
               "[torch] {}: the zip64 end record is missing or corrupt", file);
    const uint8_t* z = &bytes[record];
    cd = {le(z + 48, 8), le(z + 40, 8), le(z + 32, 8), record};
  }
  KILN_CHECK(cd.offset <= cd.end && cd.size <= cd.end - cd.offset,
             "[torch] {}: the zip central directory lies outside the file; the file is truncated", file);
  KILN_CHECK(cd.entries <= cd.size / kCentralHeaderSize,
             "[torch] {}: the zip central directory claims {} entries in {} bytes", file, cd.entries, cd.size);
  return cd;
}

// A zip64 extended-information field holds 64-bit values for those of the 32-bit fields that
// are 0xffffffff, in this order.
void apply_zip64_extra(std::span<const uint8_t> extra, uint64_t* size, uint64_t* compressed, uint64_t* offset,
                       const std::string& file) {
  Cursor fields(extra, file, "a zip extra field");
  while (fields.remaining() >= 4) {
    const uint64_t id = fields.uint(2);
    const auto body = fields.take(fields.uint(2));
    if (id != 1) continue;
    Cursor zip64(body, file, "a zip64 extra field");
    for (uint64_t* value : {size, compressed, offset})
      if (*value == kZip64Marker) *value = zip64.uint(8);
  }
}

// The bytes of the record whose local header is at `local`: they must end before the directory.
std::span<const uint8_t> record_data(std::span<const uint8_t> bytes, const CentralDirectory& cd,
                                     const std::string& name, uint64_t local, uint64_t size, const std::string& file) {
  KILN_CHECK(local <= cd.offset && cd.offset - local >= kLocalHeaderSize && le(&bytes[local], 4) == kLocalHeader,
             "[torch] {}: record '{}' has no local header where the directory says", file, printable(name));
  const uint8_t* h = &bytes[local];
  const uint64_t name_len = le(h + 26, 2);
  const uint64_t start = local + kLocalHeaderSize + name_len + le(h + 28, 2);  // < 2^17 past a file offset
  KILN_CHECK(start <= cd.offset && size <= cd.offset - start,
             "[torch] {}: record '{}' runs into the zip central directory; the file is corrupt", file, printable(name));
  KILN_CHECK(name_len == name.size() && std::memcmp(h + kLocalHeaderSize, name.data(), name.size()) == 0,
             "[torch] {}: record '{}' has another name in its local header", file, printable(name));
  return bytes.subspan(start, size);
}

// Every record by its name inside the archive folder (torch puts them all under one folder,
// named after the file or "archive").
Records read_zip(std::span<const uint8_t> bytes, const std::string& file) {
  const CentralDirectory cd = find_central_directory(bytes, file);
  Cursor dir(bytes.subspan(cd.offset, cd.size), file, "the zip central directory");
  Records records;
  std::string folder;
  for (uint64_t i = 0; i < cd.entries; ++i) {
    const uint8_t* h = dir.take(kCentralHeaderSize).data();
    KILN_CHECK(le(h, 4) == kCentralHeader, "[torch] {}: zip central directory entry {} is corrupt", file, i);
    const uint64_t flags = le(h + 8, 2), method = le(h + 10, 2);
    uint64_t compressed = le(h + 20, 4), size = le(h + 24, 4), local = le(h + 42, 4);
    const auto name_bytes = dir.take(le(h + 28, 2));
    const auto extra = dir.take(le(h + 30, 2));
    dir.take(le(h + 32, 2));  // comment
    const std::string name(name_bytes.begin(), name_bytes.end());
    apply_zip64_extra(extra, &size, &compressed, &local, file);
    KILN_CHECK(!(flags & 1), "[torch] {}: record '{}' is encrypted", file, printable(name));
    KILN_CHECK(method == 0 && compressed == size,
               "[torch] {}: record '{}' is compressed (zip method {}); torch.save stores records uncompressed", file,
               printable(name), method);
    if (i == 0) {
      const size_t slash = name.find('/');
      KILN_CHECK(slash != std::string::npos && slash > 0,
                 "[torch] {}: record '{}' is not inside an archive folder, as torch.save writes them", file,
                 printable(name));
      folder = name.substr(0, slash + 1);
    }
    KILN_CHECK(name.size() > folder.size() && name.starts_with(folder),
               "[torch] {}: record '{}' lies outside the archive folder '{}'", file, printable(name),
               printable(folder));
    const auto data = record_data(bytes, cd, name, local, size, file);
    KILN_CHECK(records.emplace(name.substr(folder.size()), data).second, "[torch] {}: record '{}' appears twice", file,
               printable(name));
  }
  return records;
}

// Before 1.6, torch.save wrote a bare pickle stream starting with this magic number (a LONG1).
constexpr uint8_t kLegacyMagic[] = {0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

void check_zip_signature(std::span<const uint8_t> bytes, const std::string& file) {
  static constexpr uint8_t kZip[] = {'P', 'K', 3, 4};
  if (bytes.size() >= 4 && std::equal(kZip, kZip + 4, bytes.begin())) return;
  const bool legacy = bytes.size() >= 2 + sizeof kLegacyMagic && bytes[0] == 0x80 &&
                      std::equal(kLegacyMagic, kLegacyMagic + sizeof kLegacyMagic, bytes.begin() + 2);
  KILN_CHECK(!legacy,
             "[torch] {}: the file is in the legacy torch.save format (PyTorch before 1.6), which is not read; "
             "re-save it with a newer PyTorch or convert it to safetensors",
             file);
  fail("[torch] {}: the file is not a torch.save zip archive (it does not start with a zip header)", file);
}

// ---- Element types, as the typed storage classes of the persistent ids name them.

struct StorageClass {
  const char* name;
  StDtype dtype;
  uint64_t size;
  const char* dtype_name;
};
constexpr StorageClass kStorageClasses[] = {
    {"FloatStorage", StDtype::F32, 4, "F32"},      {"HalfStorage", StDtype::F16, 2, "F16"},
    {"BFloat16Storage", StDtype::BF16, 2, "BF16"}, {"DoubleStorage", StDtype::F64, 8, "F64"},
    {"LongStorage", StDtype::I64, 8, "I64"},       {"IntStorage", StDtype::I32, 4, "I32"},
    {"ByteStorage", StDtype::U8, 1, "U8"},         {"CharStorage", StDtype::I8, 1, "I8"},
    {"BoolStorage", StDtype::BOOL, 1, "BOOL"},
};

const StorageClass& storage_class(StDtype dtype) {
  for (const auto& c : kStorageClasses)
    if (c.dtype == dtype) return c;
  return kStorageClasses[0];  // unreachable: every StDtype a storage can have is listed
}

// ---- The restricted unpickler.

enum class Kind : uint8_t { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor };

const char* kind_name(Kind k) {
  static const char* const kNames[] = {"None", "bool", "int",    "float",   "str",   "tuple",
                                       "list", "dict", "global", "storage", "tensor"};
  return kNames[static_cast<int>(k)];
}

// What the allowed globals are; GLOBAL refuses every other name, so nothing else can be called.
enum class Callable : uint8_t { OrderedDict, RebuildTensor, RebuildParameter, StorageClass };

struct Object {
  Kind kind = Kind::None;
  Callable callable = Callable::OrderedDict;  // Global
  StDtype dtype = StDtype::F32;               // Global (a storage class), Storage
  int64_t number = 0;                         // Bool, Int; Storage: element count; Tensor: index
  std::string text;                           // String; Global: its name; Storage: its key
  std::vector<uint32_t> items;                // Tuple, List; Dict: keys and values alternating
};

// The opcodes of pickle protocol 2 that torch.save emits for a dict of tensors.
enum Opcode : uint8_t {
  kProto = 0x80,
  kStop = '.',
  kMark = '(',
  kEmptyDict = '}',
  kEmptyList = ']',
  kEmptyTuple = ')',
  kNone = 'N',
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kLong1 = 0x8a,
  kBinFloat = 'G',
  kBinUnicode = 'X',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kGlobal = 'c',
  kTuple = 't',
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kAppend = 'a',
  kAppends = 'e',
  kSetItem = 's',
  kSetItems = 'u',
  kReduce = 'R',
  kBuild = 'b',
  kBinPersId = 'Q',
};

// Runs data.pkl over an arena of plain objects. Nothing is executed: GLOBAL resolves against a
// fixed table, REDUCE only builds dicts and tensor descriptions, BUILD only accepts (and drops)
// an OrderedDict's attributes. The interpreter is a loop, so hostile nesting cannot recurse.
class Unpickler {
 public:
  Unpickler(std::span<const uint8_t> pickle, const std::map<std::string, std::span<const uint8_t>>& storages,
            const std::string& file)
      : in_(pickle, file, "data.pkl"), storages_(storages), file_(file) {}

  // The tensors of the top-level dict, by name.
  std::map<std::string, TorchTensorInfo> load() {
    for (;;) {
      op_at_ = in_.pos();
      const uint8_t op = in_.byte();
      if (op == kStop) return state_dict(pop());
      step(op);
    }
  }

 private:
  void step(uint8_t op);
  uint32_t make(Kind kind, int64_t number = 0, std::string text = {});
  uint32_t make_global(Callable callable, std::string name, StDtype dtype = StDtype::F32);
  void spend(size_t cells);
  void push(uint32_t v);
  uint32_t pop();
  uint32_t top();
  std::vector<uint32_t> pop_mark();
  void push_tuple(std::vector<uint32_t> items);
  void add_items(uint32_t container, Kind kind, const std::vector<uint32_t>& items);
  void memo_put(uint64_t index);
  void memo_get(uint64_t index);
  int64_t read_long1();
  std::string read_line();
  uint32_t global();
  uint32_t reduce(uint32_t func, uint32_t args);
  uint32_t rebuild_tensor(const std::vector<uint32_t>& args);
  std::vector<int64_t> dims(uint32_t tuple, const char* what);
  uint32_t persistent_load(uint32_t pid);
  void build();
  std::map<std::string, TorchTensorInfo> state_dict(uint32_t root);

  Cursor in_;
  const std::map<std::string, std::span<const uint8_t>>& storages_;
  const std::string& file_;
  size_t op_at_ = 0;  // where the current opcode starts, for messages
  std::vector<Object> objects_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;  // stack heights at each open MARK
  std::unordered_map<uint64_t, uint32_t> memo_;
  std::vector<TorchTensorInfo> tensors_;
  size_t cells_ = 0;
};

void Unpickler::step(uint8_t op) {
  switch (op) {
    case kProto: {
      const int version = in_.byte();
      KILN_CHECK(version == 2, "[torch] {}: data.pkl is pickle protocol {}; torch.save writes protocol 2", file_,
                 version);
      break;
    }
    case kMark:
      KILN_CHECK(marks_.size() < kMaxMarks, "[torch] {}: data.pkl nests more than {} MARKs", file_, kMaxMarks);
      marks_.push_back(stack_.size());
      break;
    case kEmptyDict:
      push(make(Kind::Dict));
      break;
    case kEmptyList:
      push(make(Kind::List));
      break;
    case kEmptyTuple:
      push_tuple({});
      break;
    case kNone:
      push(make(Kind::None));
      break;
    case kNewTrue:
    case kNewFalse:
      push(make(Kind::Bool, op == kNewTrue));
      break;
    case kBinInt:
      push(make(Kind::Int, static_cast<int32_t>(in_.uint(4))));
      break;
    case kBinInt1:
      push(make(Kind::Int, in_.byte()));
      break;
    case kBinInt2:
      push(make(Kind::Int, static_cast<int64_t>(in_.uint(2))));
      break;
    case kLong1:
      push(make(Kind::Int, read_long1()));
      break;
    case kBinFloat:
      in_.take(8);  // no float a state dict carries is used
      push(make(Kind::Float));
      break;
    case kBinUnicode: {
      const auto text = in_.take(in_.uint(4));
      push(make(Kind::String, 0, std::string(text.begin(), text.end())));
      break;
    }
    case kBinPut:
      memo_put(in_.byte());
      break;
    case kLongBinPut:
      memo_put(in_.uint(4));
      break;
    case kBinGet:
      memo_get(in_.byte());
      break;
    case kLongBinGet:
      memo_get(in_.uint(4));
      break;
    case kGlobal:
      push(global());
      break;
    case kTuple:
      push_tuple(pop_mark());
      break;
    case kTuple1:
    case kTuple2:
    case kTuple3: {
      std::vector<uint32_t> items(op - kTuple1 + 1);
      for (size_t i = items.size(); i-- > 0;) items[i] = pop();
      push_tuple(std::move(items));
      break;
    }
    case kAppend: {
      const uint32_t value = pop();
      add_items(top(), Kind::List, {value});
      break;
    }
    case kAppends: {
      const auto values = pop_mark();
      add_items(top(), Kind::List, values);
      break;
    }
    case kSetItem: {
      const uint32_t value = pop(), key = pop();
      add_items(top(), Kind::Dict, {key, value});
      break;
    }
    case kSetItems: {
      const auto pairs = pop_mark();
      KILN_CHECK(pairs.size() % 2 == 0, "[torch] {}: data.pkl has SETITEMS with an odd number of values (byte {})",
                 file_, op_at_);
      add_items(top(), Kind::Dict, pairs);
      break;
    }
    case kReduce: {
      const uint32_t args = pop(), func = pop();
      push(reduce(func, args));
      break;
    }
    case kBuild:
      build();
      break;
    case kBinPersId:
      push(persistent_load(pop()));
      break;
    default:
      fail("[torch] {}: data.pkl has pickle opcode 0x{:02x} at byte {}, which a state dict does not use", file_, op,
           op_at_);
  }
}

uint32_t Unpickler::make(Kind kind, int64_t number, std::string text) {
  spend(1);
  Object& o = objects_.emplace_back();
  o.kind = kind;
  o.number = number;
  o.text = std::move(text);
  return static_cast<uint32_t>(objects_.size() - 1);
}

uint32_t Unpickler::make_global(Callable callable, std::string name, StDtype dtype) {
  const uint32_t v = make(Kind::Global, 0, std::move(name));
  objects_[v].callable = callable;
  objects_[v].dtype = dtype;
  return v;
}

void Unpickler::spend(size_t cells) {
  KILN_CHECK(cells <= kMaxCells - cells_, "[torch] {}: data.pkl builds more than {} objects; it is not a state dict",
             file_, kMaxCells);
  cells_ += cells;
}

void Unpickler::push(uint32_t v) {
  KILN_CHECK(stack_.size() < kMaxStack, "[torch] {}: data.pkl holds more than {} values on its stack", file_,
             kMaxStack);
  stack_.push_back(v);
}

// Values below the innermost MARK belong to an outer frame, as in Python's unpickler.
uint32_t Unpickler::top() {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  KILN_CHECK(stack_.size() > floor, "[torch] {}: data.pkl reads an empty pickle stack at byte {}", file_, op_at_);
  return stack_.back();
}

uint32_t Unpickler::pop() {
  const uint32_t v = top();
  stack_.pop_back();
  return v;
}

std::vector<uint32_t> Unpickler::pop_mark() {
  KILN_CHECK(!marks_.empty(), "[torch] {}: data.pkl closes a MARK it never opened (byte {})", file_, op_at_);
  std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
  stack_.resize(marks_.back());
  marks_.pop_back();
  return items;
}

void Unpickler::push_tuple(std::vector<uint32_t> items) {
  spend(items.size());
  const uint32_t tuple = make(Kind::Tuple);
  objects_[tuple].items = std::move(items);
  push(tuple);
}

void Unpickler::add_items(uint32_t container, Kind kind, const std::vector<uint32_t>& items) {
  KILN_CHECK(objects_[container].kind == kind, "[torch] {}: data.pkl adds items to a {} at byte {}, not to a {}", file_,
             kind_name(objects_[container].kind), op_at_, kind_name(kind));
  spend(items.size());
  auto& into = objects_[container].items;
  into.insert(into.end(), items.begin(), items.end());
}

void Unpickler::memo_put(uint64_t index) {
  const uint32_t v = top();
  if (memo_.count(index) == 0) spend(1);
  memo_[index] = v;
}

void Unpickler::memo_get(uint64_t index) {
  const auto it = memo_.find(index);
  KILN_CHECK(it != memo_.end(), "[torch] {}: data.pkl reads memo entry {} that was never stored (byte {})", file_,
             index, op_at_);
  push(it->second);
}

// LONG1: a little-endian two's-complement integer of n bytes; larger than int64 is refused.
int64_t Unpickler::read_long1() {
  const int n = in_.byte();
  KILN_CHECK(n <= 8, "[torch] {}: data.pkl has a {}-byte integer (byte {}); at most 8 are read", file_, n, op_at_);
  if (n == 0) return 0;
  const int unused = 64 - 8 * n;
  return static_cast<int64_t>(in_.uint(n) << unused) >> unused;
}

std::string Unpickler::read_line() {
  std::string line;
  for (uint8_t c = in_.byte(); c != '\n'; c = in_.byte()) {
    KILN_CHECK(line.size() < kMaxGlobalLine, "[torch] {}: data.pkl names a global longer than {} bytes", file_,
               kMaxGlobalLine);
    line.push_back(static_cast<char>(c));
  }
  return line;
}

uint32_t Unpickler::global() {
  const std::string module = read_line();
  const std::string name = read_line();
  const std::string full = module + "." + name;
  if (full == "collections.OrderedDict") return make_global(Callable::OrderedDict, full);
  if (full == "torch._utils._rebuild_tensor_v2") return make_global(Callable::RebuildTensor, full);
  if (full == "torch._utils._rebuild_parameter") return make_global(Callable::RebuildParameter, full);
  if (module == "torch") {
    for (const auto& c : kStorageClasses)
      if (name == c.name) return make_global(Callable::StorageClass, full, c.dtype);
    KILN_CHECK(!name.ends_with("Storage"), "[torch] {}: tensor storage type {} is not supported", file_,
               printable(full));
  }
  fail(
      "[torch] {}: data.pkl refers to {}, which a state dict of tensors does not need; refusing it (kiln never runs "
      "code from a checkpoint)",
      file_, printable(full));
}

uint32_t Unpickler::reduce(uint32_t func, uint32_t args) {
  const Object& f = objects_[func];
  KILN_CHECK(f.kind == Kind::Global, "[torch] {}: data.pkl calls an object of type {} at byte {}", file_,
             kind_name(f.kind), op_at_);
  KILN_CHECK(objects_[args].kind == Kind::Tuple, "[torch] {}: data.pkl calls {} with a {} for arguments", file_, f.text,
             kind_name(objects_[args].kind));
  const std::vector<uint32_t> a = objects_[args].items;  // make() below may move objects_
  switch (f.callable) {
    case Callable::OrderedDict:
      KILN_CHECK(a.empty(), "[torch] {}: data.pkl calls OrderedDict with arguments", file_);
      return make(Kind::Dict);
    case Callable::RebuildTensor:
      return rebuild_tensor(a);
    case Callable::RebuildParameter:
      // _rebuild_parameter(data, requires_grad, backward_hooks): the parameter is its tensor.
      KILN_CHECK(a.size() == 3 && objects_[a[0]].kind == Kind::Tensor,
                 "[torch] {}: _rebuild_parameter takes a tensor and two more arguments", file_);
      return a[0];
    case Callable::StorageClass:
      break;
  }
  fail("[torch] {}: data.pkl calls the storage class {}, which torch.save never does", file_, f.text);
}

// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks
// [, metadata]). Gradients, hooks and metadata do not change the values and are ignored.
uint32_t Unpickler::rebuild_tensor(const std::vector<uint32_t>& args) {
  KILN_CHECK(args.size() == 6 || args.size() == 7, "[torch] {}: _rebuild_tensor_v2 takes 6 or 7 arguments, not {}",
             file_, args.size());
  const Object& storage = objects_[args[0]];
  KILN_CHECK(storage.kind == Kind::Storage, "[torch] {}: _rebuild_tensor_v2 gets a {} for its storage", file_,
             kind_name(storage.kind));
  const Object& offset = objects_[args[1]];
  KILN_CHECK(offset.kind == Kind::Int && offset.number >= 0,
             "[torch] {}: a tensor of storage '{}' has a bad storage offset", file_, printable(storage.text));
  TorchTensorInfo t{storage.dtype, dims(args[2], "size"), dims(args[3], "stride"), static_cast<uint64_t>(offset.number),
                    storage.text};
  KILN_CHECK(t.shape.size() == t.stride.size() && t.shape.size() <= kMaxDims,
             "[torch] {}: a tensor of storage '{}' has {} sizes and {} strides (at most {} dimensions)", file_,
             printable(t.storage), t.shape.size(), t.stride.size(), kMaxDims);
  const uint64_t numel = checked_numel(t.shape, "tensor shape");
  const auto available = static_cast<uint64_t>(storage.number);
  KILN_CHECK(numel <= std::max(available, kMaxBroadcast),
             "[torch] {}: a tensor of shape {} has more elements than its storage '{}' ({})", file_,
             shape_string(t.shape), printable(t.storage), available);
  if (numel > 0) {  // the last element addressed must lie inside the storage
    uint64_t last = t.offset;
    for (size_t d = 0; d < t.shape.size(); ++d)
      last = checked_add(last, checked_mul(t.shape[d] - 1, t.stride[d], "tensor extent"), "tensor extent");
    KILN_CHECK(last < available,
               "[torch] {}: a tensor of shape {} reads element {} of storage '{}', which has {}; the file is corrupt",
               file_, shape_string(t.shape), last, printable(t.storage), available);
  }
  tensors_.push_back(std::move(t));
  return make(Kind::Tensor, static_cast<int64_t>(tensors_.size() - 1));
}

std::vector<int64_t> Unpickler::dims(uint32_t tuple, const char* what) {
  const Object& t = objects_[tuple];
  KILN_CHECK(t.kind == Kind::Tuple && t.items.size() <= kMaxDims,
             "[torch] {}: a tensor's {} is not a tuple of at most {} integers", file_, what, kMaxDims);
  std::vector<int64_t> out;
  for (uint32_t v : t.items) {
    KILN_CHECK(objects_[v].kind == Kind::Int && objects_[v].number >= 0,
               "[torch] {}: a tensor's {} holds a negative or non-integer value", file_, what);
    out.push_back(objects_[v].number);
  }
  return out;
}

// torch.save's persistent ids: ('storage', StorageClass, key, location, element count).
uint32_t Unpickler::persistent_load(uint32_t pid) {
  const Object& id = objects_[pid];
  KILN_CHECK(id.kind == Kind::Tuple && id.items.size() == 5,
             "[torch] {}: a persistent id is not ('storage', type, key, location, size)", file_);
  const Object& tag = objects_[id.items[0]];
  const Object& type = objects_[id.items[1]];
  const Object& key = objects_[id.items[2]];
  const Object& count = objects_[id.items[4]];
  KILN_CHECK(tag.kind == Kind::String && tag.text == "storage", "[torch] {}: a persistent id is not a storage", file_);
  KILN_CHECK(type.kind == Kind::Global && type.callable == Callable::StorageClass,
             "[torch] {}: a persistent id names {} rather than a storage class", file_,
             type.kind == Kind::Global ? printable(type.text) : kind_name(type.kind));
  KILN_CHECK(key.kind == Kind::String && count.kind == Kind::Int && count.number >= 0,
             "[torch] {}: a persistent id has a bad storage key or size", file_);
  const auto record = storages_.find(key.text);
  KILN_CHECK(record != storages_.end(), "[torch] {}: storage '{}' is missing from the archive (no record data/{})",
             file_, printable(key.text), printable(key.text));
  const StorageClass& c = storage_class(type.dtype);
  const uint64_t bytes = checked_mul(static_cast<uint64_t>(count.number), c.size, "storage size");
  KILN_CHECK(bytes == record->second.size(), "[torch] {}: storage '{}' has {} bytes but {} {} elements need {}", file_,
             printable(key.text), record->second.size(), count.number, c.dtype_name, bytes);
  const StDtype dtype = type.dtype;
  const uint32_t storage = make(Kind::Storage, count.number, key.text);
  objects_[storage].dtype = dtype;
  return storage;
}

// torch.save pickles a state dict's _metadata attribute as BUILD on the OrderedDict; it only
// holds module versions, so it is dropped.
void Unpickler::build() {
  const uint32_t state = pop();
  const Kind target = objects_[top()].kind, given = objects_[state].kind;
  KILN_CHECK(target == Kind::Dict && (given == Kind::Dict || given == Kind::None),
             "[torch] {}: data.pkl sets the state of a {} from a {} (byte {}); only a dict's attributes are accepted",
             file_, kind_name(target), kind_name(given), op_at_);
}

// Nested dicts (e.g. {"model": state_dict}) are not read: a checkpoint is a dict of tensors.
std::map<std::string, TorchTensorInfo> Unpickler::state_dict(uint32_t root) {
  const Object& dict = objects_[root];
  KILN_CHECK(dict.kind == Kind::Dict, "[torch] {}: data.pkl holds a {}, not a state dict", file_, kind_name(dict.kind));
  std::map<std::string, TorchTensorInfo> out;
  bool nested = false;
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const Object& key = objects_[dict.items[i]];
    const Object& value = objects_[dict.items[i + 1]];
    nested |= value.kind == Kind::Dict;
    if (value.kind != Kind::Tensor) {                     // e.g. an epoch counter beside the weights: skipped
      if (key.kind == Kind::String) out.erase(key.text);  // a repeated key replaces, as in Python
      continue;
    }
    KILN_CHECK(key.kind == Kind::String, "[torch] {}: a tensor is stored under a {} key, not a name", file_,
               kind_name(key.kind));
    out[key.text] = tensors_[static_cast<size_t>(value.number)];
  }
  KILN_CHECK(!out.empty() || !nested,
             "[torch] {}: the saved dict holds no tensors, only nested dicts (such as {{'model': state_dict}}), which "
             "are not read",
             file_);
  return out;
}

// ---- Conversion to fp32.

template <typename Load>
void convert_run(const uint8_t* p, uint64_t step, float* out, uint64_t n, Load load) {
  for (uint64_t k = 0; k < n; ++k) out[k] = load(p + k * step);
}

// n elements `step` bytes apart from p, as floats.
void convert(StDtype dtype, const uint8_t* p, uint64_t step, float* out, uint64_t n) {
  switch (dtype) {
    case StDtype::F32:
      if (step == 4) return void(std::memcpy(out, p, n * 4));
      return convert_run(p, step, out, n, [](const uint8_t* q) {
        float v;
        std::memcpy(&v, q, 4);
        return v;
      });
    case StDtype::F64:
      return convert_run(p, step, out, n, [](const uint8_t* q) {
        double v;
        std::memcpy(&v, q, 8);
        return static_cast<float>(v);
      });
    case StDtype::F16:
      return convert_run(p, step, out, n,
                         [](const uint8_t* q) { return half_to_float(static_cast<uint16_t>(le(q, 2))); });
    case StDtype::BF16:
      return convert_run(p, step, out, n,
                         [](const uint8_t* q) { return bf16_to_float(static_cast<uint16_t>(le(q, 2))); });
    default:
      return;  // callers pass floating-point types only
  }
}

bool is_contiguous(const TorchTensorInfo& t) {
  int64_t expected = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    if (t.shape[d] != 1 && t.stride[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

}  // namespace

TorchCheckpointFile::TorchCheckpointFile(const std::string& path) : name_(path) {
  file_ = std::make_unique<MappedFile>(path);
  parse(file_->bytes());
}

TorchCheckpointFile TorchCheckpointFile::from_bytes(std::span<const uint8_t> bytes, const std::string& name) {
  TorchCheckpointFile f;
  f.name_ = name;
  f.parse(bytes);
  return f;
}

void TorchCheckpointFile::parse(std::span<const uint8_t> bytes) {
  check_zip_signature(bytes, name_);
  const Records records = read_zip(bytes, name_);
  KILN_CHECK(!records.count("constants.pkl"),
             "[torch] {}: the file is a TorchScript archive (torch.jit.save), not a torch.save state dict", name_);
  const auto pickle = records.find("data.pkl");
  KILN_CHECK(pickle != records.end(), "[torch] {}: the archive has no data.pkl; torch.save did not write it", name_);
  KILN_CHECK(pickle->second.size() <= kMaxPickleBytes, "[torch] {}: data.pkl is {} bytes, over the {} MiB limit", name_,
             pickle->second.size(), kMaxPickleBytes >> 20);
  // Files from before the byte-order record are little-endian in practice.
  if (const auto order = records.find("byteorder"); order != records.end()) {
    const std::string value(order->second.begin(), order->second.end());
    KILN_CHECK(value == "little", "[torch] {}: byte order is '{}'; only little-endian checkpoints are read", name_,
               printable(value));
  }
  for (const auto& [record, data] : records)
    if (record.starts_with("data/")) storages_.emplace(record.substr(5), data);
  tensors_ = Unpickler(pickle->second, storages_, name_).load();
}

const TorchTensorInfo& TorchCheckpointFile::info(const std::string& name) const {
  const auto it = tensors_.find(name);
  KILN_CHECK(it != tensors_.end(), "[torch] {}: no tensor named '{}'", name_, printable(name));
  return it->second;
}

Tensor TorchCheckpointFile::to_float(const std::string& name) const {
  const TorchTensorInfo& t = info(name);
  const StorageClass& c = storage_class(t.dtype);
  KILN_CHECK(t.dtype == StDtype::F32 || t.dtype == StDtype::F16 || t.dtype == StDtype::BF16 || t.dtype == StDtype::F64,
             "[torch] {}: tensor '{}' is {}, not floating point", name_, printable(name), c.dtype_name);
  Tensor out(t.shape);
  if (out.data.empty()) return out;
  // Every element addressed was checked against the storage when the file was parsed.
  const uint8_t* base = storages_.at(t.storage).data() + t.offset * c.size;
  if (is_contiguous(t)) {
    convert(t.dtype, base, c.size, out.data.data(), out.data.size());
    return out;
  }
  // Gather a strided view: an odometer over the outer dimensions, one run along the last.
  const size_t outer = t.shape.size() - 1;  // a 0-d tensor is contiguous
  const auto run = static_cast<uint64_t>(t.shape.back());
  std::vector<int64_t> index(outer, 0);
  for (float* dst = out.data.data(); dst != out.data.data() + out.data.size(); dst += run) {
    uint64_t first = 0;
    for (size_t d = 0; d < outer; ++d) first += static_cast<uint64_t>(index[d] * t.stride[d]);
    convert(t.dtype, base + first * c.size, static_cast<uint64_t>(t.stride.back()) * c.size, dst, run);
    for (size_t d = outer; d-- > 0;) {
      if (++index[d] < t.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace kiln
