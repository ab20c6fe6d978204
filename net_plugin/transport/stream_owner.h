// What a stream tells whoever owns it. Stream (stream.h) knows only this
// interface, not the comm above it, so the include arrows of the transport
// layer point one way: comm -> stream -> stream_owner.
#pragma once

#include <string>

#include "net_plugin/base/status.h"

namespace bagua::net {

class StreamOwner {
 public:
  virtual ~StreamOwner() = default;
  // On the stream's worker: the stream cannot go on (its fd could not be
  // attached to the worker); the owner fails with `message`.
  virtual void streamFailed(Status status, const std::string& message) = 0;
  // On the stream's worker, once the stream is detached and its fd closed
  // (and the kernel holds none of its buffers): the owner may delete it.
  virtual void streamClosed() = 0;
};

}  // namespace bagua::net
