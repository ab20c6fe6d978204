// ProcessGroup::allreduceMinMaxUInt8: the runtime's ByteGrad on one flat
// buffer, for Python algorithms written with the original's bucket API
// (bucket.append_centralized_synchronous_op(compression="MinMaxUInt8")).
#include "python/src/process_group.h"
#include "runtime/algorithms/bytegrad.h"
#include "runtime/common/error.h"

namespace bagua::python {

struct ProcessGroup::Compressor {
  std::vector<BucketLayout> layout;  // one bucket of the whole buffer
  ByteGrad algorithm;
  explicit Compressor(ByteGrad::Options options) : algorithm(options) {}
};

void ProcessGroup::allreduceMinMaxUInt8(uintptr_t ptr, size_t count, const std::string& dtype,
                                        bool average, uintptr_t stream) {
  const DType d = parseDType(dtype);
  const auto n = static_cast<size_t>(size());
  BAGUA_ENFORCE(count % n == 0, "allreduce_minmax_uint8: " + std::to_string(count) +
                                    " elements are not a multiple of the group's " +
                                    std::to_string(n) + " ranks (pad the buffer)");
  if (count == 0) return;
  std::shared_ptr<Compressor> c;
  {
    std::lock_guard<std::mutex> lock(compressorsMutex_);
    auto& slot = compressors_[{count, d, average}];
    if (!slot) {
      ByteGrad::Options options;
      options.average = average;
      auto made = std::make_shared<Compressor>(options);
      made->layout.resize(1);
      made->layout[0].dtype = d;
      made->layout[0].numel = made->layout[0].paddedNumel = count;
      made->algorithm.setup(made->layout, *comm_, *ops_);
      slot = made;
    }
    c = slot;
  }
  BucketContext bucket;
  bucket.layout = &c->layout[0];
  bucket.data = reinterpret_cast<void*>(ptr);
  bucket.comm = comm_.get();
  bucket.ops = ops_.get();
  run(stream, [&] { return c->algorithm.communicate(bucket); });
}

}  // namespace bagua::python
