// Errors of the cache's stores, so callers (and the Python binding) tell
// "the store is gone" (fall back to the source) from "the password is
// wrong" (a setup error). Both are CommErrors.
#pragma once

#include "runtime/common/error.h"

namespace bagua {

// A store server could not be reached, or the connection failed or timed
// out mid-command; the message names host:port and the cause.
class CacheConnectError : public CommError {
  using CommError::CommError;
};

// A store server refused the password (or wanted one); the message names
// host:port and the server's answer.
class CacheAuthError : public CommError {
  using CommError::CommError;
};

// A store server answered a command with an error (e.g. out of memory
// under a noeviction policy); the message names host:port and the answer.
class CacheStoreError : public CommError {
  using CommError::CommError;
};

}  // namespace bagua
