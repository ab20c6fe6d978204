// The --help text of bagua-net-perf: flags, --configs syntax, formulas and
// exit codes in one place, so the documentation and the code agree.
#pragma once

#include <cstdio>

namespace bagua::net_perf {

void printUsage(FILE* out);

}  // namespace bagua::net_perf
