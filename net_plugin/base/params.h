// The plugin's environment knobs: their values (Params), generated from the
// knob table in knobs.def, where each knob is declared once (name, field,
// type, default, range, doc).
//
// The process reads them once (params()), the first time any is needed.
// The original Bagua-Net's names are read as aliases of ours where the
// meaning maps (knob_aliases.def; our own name wins). Knobs set in the
// environment are logged at INFO (INIT|NET) by logParams().
// docs/env.md mirrors the table; tests/net_plugin/env_doc_test.cc checks that
// it lists exactly the table's knobs with the same defaults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bagua::net {

enum class EngineKind { kAuto, kIoUring, kEpoll, kInline };
enum class ZeroCopyMode { kOff, kAuto, kAlways };

// The minimum retransmission timeout BAGUA_NET_RTO_MIN_US=-1 picks: 50 to
// 1000 times a datacenter round trip, so a spurious timeout needs a delay
// spike that large, yet 20 times shorter than the kernel's default.
constexpr int kAutoRtoMinUs = 10000;

// An AutoBytes knob left at auto; resolved where the CPUs are known
// (minSplitBytesFor in cpu_budget.h).
constexpr size_t kAutoBytes = static_cast<size_t>(-1);

// The value types of the knob table's rows: how each knob is stored (Value),
// and, in params.cc, parsed from its environment text and written in the docs.
namespace knob {
struct Int {  // a decimal integer in [min, max]
  using Value = int;
};
struct Bytes {  // a size with an optional K/M/G suffix (binary), in [min, max]
  using Value = size_t;
};
struct AutoBytes {  // auto (kAutoBytes) or a size as Bytes
  using Value = size_t;
};
struct Engine {  // auto | io_uring | epoll | inline
  using Value = EngineKind;
};
struct ZeroCopy {  // off | auto | always
  using Value = ZeroCopyMode;
};
struct CpuList {  // "0-3,8"
  using Value = std::vector<int>;
};
struct Text {  // any text
  using Value = std::string;
};
struct Family {  // AF_INET | AF_INET6
  using Value = std::string;
};
}  // namespace knob

// Every knob's value: one field per row of knobs.def, which says what each
// means, its type, default and range.
struct Params {
#define BAGUA_NET_KNOB(name, field, Type, def, min, max, doc) knob::Type::Value field = def;
#include "net_plugin/base/knobs.def"
#undef BAGUA_NET_KNOB
};

// One row of the knob table, as data.
struct KnobInfo {
  const char* name;         // e.g. "BAGUA_NET_STREAMS"
  std::string defaultText;  // the default as docs/env.md writes it: "4", "256K", "auto", "empty"
  std::string accepted;     // the accepted values: "1..64", "auto | io_uring | epoll"
  const char* doc;          // one line
};

// The knob table, in knobs.def's order.
const std::vector<KnobInfo>& knobTable();

// Reads every knob from the environment, each from its own name or else from
// an alias of it (knob_aliases.h). Throws NetError naming the first malformed
// knob (in table order), the variable it was read from, and the expected form.
Params loadParams();

// The process's knobs, loaded on first use and kept (a throwing load is
// retried on the next call). Only the API layer calls this, where NCCL's
// calls arrive with no context; everything below it is given a Params or
// the values it needs (scripts/check_layers.py checks), so tests may build
// objects with other values in the same process.
const Params& params();

// How many streams a connection opens: BAGUA_NET_STREAMS, or
// BAGUA_NET_MAX_STREAMS when that is larger and streams adapt.
int streamsToOpen(const Params& p);

// Names of every knob, in table order.
const std::vector<std::string>& paramNames();

// Logs (INIT|NET) each knob set in the environment, with its text; for the
// original Bagua-Net's names, which of ours each became (INIT|NET), a WARN
// for each that lost to our own name with another value, and one WARN
// naming those ignored.
void logParams();

// Parses a CPU list such as "0-3,8,10-11" into *out. Returns false when the
// text is malformed or names a CPU outside [0, 4096).
bool parseCpuList(const std::string& text, std::vector<int>* out);

// Parses "123", "64K", "4M", "1G" (binary multiples). Returns false when the
// text is not a non-negative size.
bool parseBytes(const std::string& text, size_t* out);

}  // namespace bagua::net
