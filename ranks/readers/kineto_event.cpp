#include "kineto_event.hpp"

#include <algorithm>
#include <cctype>

#include "common/text.hpp"
#include "ranks/kineto_reader.hpp"

namespace ranks {

bool parse_us_to_ns(std::string_view t, int64_t& ns) {
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t')) t.remove_suffix(1);
  bool neg = false;
  if (!t.empty() && t.front() == '-') neg = true, t.remove_prefix(1);
  char digits[40];
  int nd = 0, point = -1, exp = 0;
  size_t i = 0;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (c >= '0' && c <= '9') {
      if (nd == 0 && c == '0' && point < 0) continue;  // leading zeros of the integer part
      if (nd < 39) digits[nd++] = c;
      else if (point < 0) return false;  // beyond any time we could hold
    } else if (c == '.' && point < 0) {
      point = nd;
    } else {
      break;
    }
  }
  if (i == 0 || (i == 1 && point == 0)) return false;
  if (i < t.size()) {  // an exponent
    if (t[i] != 'e' && t[i] != 'E') return false;
    ++i;
    bool eneg = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) eneg = t[i] == '-', ++i;
    if (i == t.size()) return false;
    for (; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9' || exp > 1000) return false;
      exp = exp * 10 + (t[i] - '0');
    }
    if (eneg) exp = -exp;
  }
  if (point < 0) point = nd;
  const int64_t shift = int64_t(point) + exp + 3;  // digits before the nanosecond's decimal point
  constexpr int64_t kMax = int64_t(1) << 62;
  int64_t r = 0;
  for (int64_t d = 0; d < shift; ++d) {
    const int v = d < nd ? digits[d] - '0' : 0;
    if (r > (kMax - v) / 10) return false;
    r = r * 10 + v;
  }
  if (shift >= 0 && shift < nd && digits[shift] >= '5') ++r;  // half away from zero
  ns = neg ? -r : r;
  return true;
}

namespace detail {
namespace ond = simdjson::ondemand;

namespace {

std::optional<int64_t> int_of(ond::value v) {
  int64_t x = 0;
  if (v.get_int64().get(x)) return std::nullopt;
  return x;
}
std::string_view str_of(ond::value v) {
  std::string_view s;
  if (v.get_string().get(s)) return {};
  return s;
}
bool time_of(ond::value v, int64_t& ns) {
  return parse_us_to_ns(v.raw_json_token(), ns);
}

// Elements of the first tensor of "Input Dims" ([[394241]], [[8, 512], []]).
int64_t first_numel(ond::value v) {
  ond::array outer;
  if (v.get_array().get(outer)) return -1;
  for (auto inner_r : outer) {
    ond::array inner;
    if (inner_r.get_array().get(inner)) return -1;
    int64_t n = 1;
    for (auto d_r : inner) {
      int64_t d = 0;
      if (d_r.get_int64().get(d) || d < 0 || (d > 0 && n > (int64_t(1) << 50) / d)) return -1;
      n *= d;
    }
    return n;
  }
  return -1;
}
std::string_view first_string(ond::value v) {
  ond::array a;
  if (v.get_array().get(a)) return {};
  for (auto s_r : a) {
    std::string_view s;
    if (s_r.get_string().get(s)) return {};
    return s;
  }
  return {};
}

bool parse_args(ond::value v, KinetoArgs& a) {
  ond::object o;
  if (v.get_object().get(o)) return true;  // not an object: no args
  for (auto f_r : o) {
    ond::field f;
    std::string_view k;
    if (std::move(f_r).get(f) || f.unescaped_key().get(k)) return false;
    ond::value x = f.value();
    if (k == "stream") a.stream = int_of(x);
    else if (k == "device") a.device = int_of(x);
    else if (k == "correlation") a.correlation = int_of(x);
    else if (k == "bytes") a.bytes = int_of(x);
    else if (k == "In msg nelems") a.in_nelems = int_of(x);
    else if (k == "Out msg nelems") a.out_nelems = int_of(x);
    else if (k == "Group size") a.group_size = int_of(x);
    else if (k == "Collective name") a.collective = str_of(x);
    else if (k == "dtype") a.dtype = str_of(x);
    else if (k == "Process Group Name") a.pg_name = str_of(x);
    else if (k == "Process Group Ranks") a.pg_ranks = str_of(x);
    else if (k == "Input Dims") a.input_numel = first_numel(x);
    else if (k == "Input type") a.input_type = first_string(x);
  }
  return true;
}

}  // namespace

bool parse_event(ond::parser& p, std::string_view text, KinetoEvent& e) {
  simdjson::padded_string_view psv(text.data(), text.size(), text.size() + simdjson::SIMDJSON_PADDING);
  ond::document doc;
  ond::object o;
  if (p.iterate(psv).get(doc) || doc.get_object().get(o)) return false;
  for (auto f_r : o) {
    ond::field f;
    std::string_view k;
    if (std::move(f_r).get(f) || f.unescaped_key().get(k)) return false;
    ond::value v = f.value();
    if (k == "ph") e.ph = str_of(v);
    else if (k == "cat") e.cat = str_of(v);
    else if (k == "name") e.name = str_of(v);
    else if (k == "ts") e.has_ts = time_of(v, e.ts);
    else if (k == "dur") {
      e.has_dur = time_of(v, e.dur);
      if (!e.has_dur) e.dur = 0;
    } else if (k == "pid") {
      if (auto x = int_of(v)) e.pid = *x, e.pid_int = true;
    } else if (k == "tid") {
      if (auto x = int_of(v)) e.tid = *x, e.tid_int = true;
    } else if (k == "args") {
      if (!parse_args(v, e.args)) return false;
    }
  }
  return true;
}

bool parse_header_member(ond::parser& p, std::string_view key, std::string_view raw, KinetoHeader& h) {
  simdjson::padded_string_view psv(raw.data(), raw.size(), raw.size() + simdjson::SIMDJSON_PADDING);
  ond::document doc;
  if (p.iterate(psv).get(doc)) return false;
  if (key == "baseTimeNanoseconds") {
    int64_t b = 0;
    if (doc.get_int64().get(b)) return false;
    h.base_ns = b;
    return true;
  }
  if (key == "schemaVersion") {
    std::string_view tok;
    if (doc.raw_json_token().get(tok)) return false;
    h.schema = common::ascii_only(tok, 32);
    return true;
  }
  if (key == "distributedInfo") {
    ond::object o;
    if (doc.get_object().get(o)) return false;
    for (auto f_r : o) {
      ond::field f;
      std::string_view k;
      if (std::move(f_r).get(f) || f.unescaped_key().get(k)) return false;
      if (k != "rank" && k != "world_size") continue;
      int64_t r = 0;
      if (f.value().get_int64().get(r) || r < 0 || r > (int64_t(1) << 21)) return false;
      if (k == "rank") h.rank = int(r);
      else if (r > 0) h.world = int(r);
    }
    return true;
  }
  if (key == "deviceProperties") {
    ond::array a;
    if (doc.get_array().get(a)) return false;
    for (auto d_r : a) {
      ond::object d;
      if (d_r.get_object().get(d)) return false;
      int64_t id = -1;
      std::string name;
      for (auto f_r : d) {
        ond::field f;
        std::string_view k;
        if (std::move(f_r).get(f) || f.unescaped_key().get(k)) return false;
        if (k == "id") id = int_of(f.value()).value_or(-1);
        else if (k == "name") name = common::ascii_only(str_of(f.value()), 128);
      }
      if (id >= 0) h.gpus.push_back({id, name});
    }
    return true;
  }
  return false;
}

int dtype_size(std::string_view d) {
  // Namespace prefixes of C++ type names ("c10::Half", "at::BFloat16") say nothing of the size.
  for (std::string_view ns : {"c10::", "at::"})
    if (d.substr(0, ns.size()) == ns) d.remove_prefix(ns.size());
  std::string s;
  for (char c : d.substr(0, 32)) s += char(std::tolower(static_cast<unsigned char>(c)));
  static const std::pair<const char*, int> sizes[] = {
      {"float", 4},    {"float32", 4},  {"double", 8},       {"float64", 8},     {"half", 2},
      {"float16", 2},  {"bfloat16", 2}, {"long", 8},         {"longint", 8},     {"long int", 8},
      {"int64", 8},    {"int64_t", 8},  {"int", 4},          {"int32", 4},       {"short", 2},
      {"int16", 2},    {"char", 1},     {"signed char", 1},  {"unsigned char", 1}, {"byte", 1},
      {"uint8", 1},    {"int8", 1},     {"bool", 1},         {"float8_e4m3fn", 1}, {"float8_e5m2", 1},
      {"complexfloat", 8}, {"complexdouble", 16},
  };
  for (auto [n, b] : sizes)
    if (s == n) return b;
  return 0;
}

CollectiveMeta collective_meta(const KinetoArgs& a) {
  CollectiveMeta m;
  m.present = !a.collective.empty() || !a.pg_name.empty() || a.in_nelems || a.out_nelems;
  if (!m.present) return m;
  if (!a.collective.empty()) m.call = "nccl:" + common::ascii_only(a.collective, 64);
  const int size = dtype_size(a.dtype);
  int64_t n = -1;
  if (a.in_nelems && *a.in_nelems >= 0) n = *a.in_nelems;
  if (a.out_nelems && *a.out_nelems >= 0) n = n < 0 ? *a.out_nelems : std::min(n, *a.out_nelems);
  if (size > 0 && n >= 0 && n <= (int64_t(1) << 56)) m.bytes = n * size;
  if (!a.pg_name.empty()) {
    // FNV-1a over name and ranks: equal on every member of the group, whatever the rank.
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](std::string_view s) {
      for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
      h = (h ^ 0xff) * 1099511628211ull;
    };
    mix(a.pg_name);
    if (!a.pg_ranks.empty()) mix(a.pg_ranks);
    else mix(std::to_string(a.group_size.value_or(0)));
    m.comm = h ? h : 1;
  }
  return m;
}

int64_t range_bytes(const KinetoArgs& a) {
  const int size = dtype_size(a.input_type);
  if (size == 0 || a.input_numel < 0 || a.input_numel > (int64_t(1) << 56)) return -1;
  return a.input_numel * size;
}

}  // namespace detail
}  // namespace ranks
