// bagua._C.FlatWatch and find_tensor_layout (flat_watch.h).
#include "python/src/flat_watch.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "runtime/common/error.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace bagua::python {
namespace {

using Indices = std::vector<size_t>;
using Layout = std::tuple<size_t, size_t, size_t, size_t, size_t>;

// Offsets in bytes: Python tensor -> TensorImpl*, TensorImpl -> StorageImpl*,
// -> storage offset (elements), -> AutogradMeta*, AutogradMeta -> grad's TensorImpl*.
struct Fields {
  size_t impl = 0, storage = 0, offset = 0, meta = 0, grad = 0;
};

uintptr_t word(uintptr_t base, size_t offset) {
  uintptr_t v;
  std::memcpy(&v, reinterpret_cast<const void*>(base + offset), sizeof(v));
  return v;
}

uintptr_t addressOf(const nb::handle& h) { return reinterpret_cast<uintptr_t>(h.ptr()); }

// A hint to bring the line at `address` into the cache. On x86-64 as an
// instruction of its own: GCC 12 at -O1 and above drops __builtin_prefetch
// calls here (FlatWatch::check lost all five).
inline void prefetch(uintptr_t address) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 (%0)" : : "r"(address));
#else
  __builtin_prefetch(reinterpret_cast<const void*>(address));
#endif
}

// The one offset in [from, to) (step 8, not in `taken`) where pred holds;
// 0 when none or several do.
template <typename Pred>
size_t uniqueOffset(size_t from, size_t to, std::initializer_list<size_t> taken, Pred pred) {
  size_t found = 0;
  for (size_t k = from; k < to; k += 8) {
    bool skip = false;
    for (size_t t : taken) skip = skip || t == k;
    if (skip || !pred(k)) continue;
    if (found != 0) return 0;
    found = k;
  }
  return found;
}

// Probe tensors with known values -> the field offsets, or nothing. params:
// tensors with autograd meta and a gradient (impls, storages, offsets:
// their TensorImpl, StorageImpl and storage offset; grads: their gradient's
// TensorImpl); plain: tensors without autograd meta (plainImpls).
std::optional<Layout> findTensorLayout(nb::list params, std::vector<uintptr_t> impls,
                                       std::vector<uintptr_t> storages,
                                       std::vector<uintptr_t> offsets, std::vector<uintptr_t> grads,
                                       nb::list plain, std::vector<uintptr_t> plainImpls) {
  const size_t n = nb::len(params), m = nb::len(plain);
  BAGUA_ENFORCE(n >= 4 && m >= 1 && impls.size() == n && storages.size() == n &&
                    offsets.size() == n && grads.size() == n && plainImpls.size() == m,
                "find_tensor_layout: inconsistent probe lists");
  Fields f;
  f.impl = uniqueOffset(16, 64, {}, [&](size_t k) {
    for (size_t i = 0; i < n; ++i) {
      if (word(addressOf(params[i]), k) != impls[i]) return false;
    }
    for (size_t j = 0; j < m; ++j) {
      if (word(addressOf(plain[j]), k) != plainImpls[j]) return false;
    }
    return true;
  });
  if (f.impl == 0) return std::nullopt;
  f.storage = uniqueOffset(8, 64, {}, [&](size_t k) {
    for (size_t i = 0; i < n; ++i) {
      if (word(impls[i], k) != storages[i]) return false;
    }
    return true;
  });
  // A storage offset field: the probes' offsets differ, so one offset only.
  f.offset = uniqueOffset(16, 184, {f.storage}, [&](size_t k) {
    for (size_t i = 0; i < n; ++i) {
      if (word(impls[i], k) != offsets[i]) return false;
    }
    return true;
  });
  if (f.storage == 0 || f.offset == 0) return std::nullopt;
  // The meta pointer: null without autograd meta, a pointer with it; only
  // such a field is followed, to the grad field that holds each gradient.
  f.meta = uniqueOffset(8, 64, {f.storage, f.offset}, [&](size_t k) {
    for (size_t j = 0; j < m; ++j) {
      if (word(plainImpls[j], k) != 0) return false;
    }
    for (size_t i = 0; i < n; ++i) {
      const uintptr_t meta = word(impls[i], k);
      if (meta < 4096 || meta % 8 != 0) return false;
    }
    return true;
  });
  if (f.meta == 0) return std::nullopt;
  f.grad = uniqueOffset(8, 160, {}, [&](size_t k) {
    for (size_t i = 0; i < n; ++i) {
      if (word(word(impls[i], f.meta), k) != grads[i]) return false;
    }
    return true;
  });
  if (f.grad == 0) return std::nullopt;
  return Layout{f.impl, f.storage, f.offset, f.meta, f.grad};
}

class FlatWatch {
 public:
  // params: the group's parameters; gradViews: their gradient views (held,
  // compared by identity) or None (compared by gradPtrs); dataPtrs: where
  // each parameter's data must start; gradDescr / dataPtr: torch's `grad`
  // getter and `data_ptr` method (torch._C.TensorBase.__dict__); layout:
  // find_tensor_layout's answer or None, with storage (the parameter
  // buffer's StorageImpl) and offsets (each parameter's storage offset).
  FlatWatch(nb::list params, nb::object gradViews, std::vector<uintptr_t> gradPtrs,
            std::vector<uintptr_t> dataPtrs, nb::object gradDescr, nb::object dataPtr,
            std::optional<Layout> layout, uintptr_t storage, std::vector<uintptr_t> offsets)
      : gradPtrs_(std::move(gradPtrs)),
        dataPtrs_(std::move(dataPtrs)),
        offsets_(std::move(offsets)),
        gradDescr_(std::move(gradDescr)),
        dataPtr_(std::move(dataPtr)),
        storage_(storage) {
    const size_t n = nb::len(params);
    BAGUA_ENFORCE(gradPtrs_.size() == n && dataPtrs_.size() == n,
                  "FlatWatch: " + std::to_string(n) + " parameters but " +
                      std::to_string(gradPtrs_.size()) + " gradient and " +
                      std::to_string(dataPtrs_.size()) + " data pointers");
    BAGUA_ENFORCE(PyCallable_Check(dataPtr_.ptr()), "FlatWatch: data_ptr is not callable");
#ifndef Py_LIMITED_API
    if (Py_TYPE(gradDescr_.ptr()) == &PyGetSetDescr_Type) {
      auto* d = reinterpret_cast<PyGetSetDescrObject*>(gradDescr_.ptr());
      getter_ = d->d_getset->get;
      setter_ = d->d_getset->set;
      closure_ = d->d_getset->closure;
      owner_ = d->d_common.d_type;
    }
#endif
    params_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      nb::object p = params[i];
      // The getter is called without the descriptor's own type check.
      BAGUA_ENFORCE(owner_ == nullptr || PyObject_TypeCheck(p.ptr(), owner_),
                    "FlatWatch: parameter " + std::to_string(i) + " is not a tensor");
      params_.push_back(std::move(p));
    }
    if (!gradViews.is_none()) {
      nb::list views = nb::cast<nb::list>(gradViews);
      BAGUA_ENFORCE(nb::len(views) == n, "FlatWatch: " + std::to_string(n) + " parameters but " +
                                             std::to_string(nb::len(views)) + " gradient views");
      views_.reserve(n);
      for (size_t i = 0; i < n; ++i) views_.push_back(views[i]);
    }
    if (layout && !views_.empty() && offsets_.size() == n) enableFields(*layout);
  }

  ~FlatWatch() { endScan(); }
  FlatWatch(const FlatWatch&) = delete;
  FlatWatch& operator=(const FlatWatch&) = delete;

  // A pieced step (fuse/pipeline.py): helper threads read the fields of
  // every parameter, block after block in order, while the caller checks,
  // repairs and steps the pieces already read. The caller only touches the
  // parameters of blocks the helpers are done with. No-op without fields.
  void beginScan() {
    if (!fields_ || scanning_) return;
    const size_t n = params_.size();
    const size_t blocks = (n + kPerThread - 1) / kPerThread;
    scanned_.assign(n, 0);
    blockDone_ = std::make_unique<std::atomic<uint8_t>[]>(blocks);
    for (size_t b = 0; b < blocks; ++b) blockDone_[b].store(0, std::memory_order_relaxed);
    nextBlock_.store(0);
    const size_t threads = threadsFor(n);
    for (size_t t = 0; t < threads; ++t) {
      helpers_.emplace_back([this, n, blocks] {
        for (size_t b = nextBlock_.fetch_add(1); b < blocks; b = nextBlock_.fetch_add(1)) {
          const size_t to = std::min(n, (b + 1) * kPerThread);
          for (size_t i = b * kPerThread; i < to; ++i) {
            prefetchAhead(i, to);
            scanned_[i] = !untouched(i);
          }
          blockDone_[b].store(1, std::memory_order_release);
        }
      });
    }
    scanning_ = true;
  }

  // Waits for the helpers (they finish their pass) and ends the scan.
  void endScan() {
    for (auto& t : helpers_) t.join();
    helpers_.clear();
    scanning_ = false;
  }

  // (missing, odd, moved, grads): parameters in [begin, end) (end 0: all)
  // whose gradient is None, whose gradient is another tensor than the view
  // (grads: those gradients), whose data moved.
  std::tuple<Indices, Indices, Indices, nb::list> check(size_t begin, size_t end) const {
    if (end == 0) end = params_.size();
    BAGUA_ENFORCE(begin <= end && end <= params_.size(),
                  "FlatWatch.check: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                      ") of " + std::to_string(params_.size()) + " parameters");
    Indices missing, odd, moved;
    nb::list grads;
    if (scanning_) {
      for (size_t b = begin / kPerThread; b * kPerThread < end; ++b) {
        while (!blockDone_[b].load(std::memory_order_acquire)) std::this_thread::yield();
      }
      for (size_t i = begin; i < end; ++i) {
        if (scanned_[i]) classify(i, missing, odd, moved, grads);
      }
    } else if (!fields_) {
      for (size_t i = begin; i < end; ++i) classify(i, missing, odd, moved, grads);
    } else {
      // Each parameter is a chain of three dependent loads (Python object ->
      // TensorImpl -> AutogradMeta), scattered in memory: one at a time, the
      // pass waits on each cache miss in turn. Prefetching the chains of
      // parameters ahead, one link per stage, overlaps those misses, and
      // large groups are split over threads (plain reads of objects this
      // watch keeps alive, while the caller holds the GIL: nothing changes
      // them meanwhile). Parameters found touched go through the accessors
      // here, on the calling thread.
      const size_t n = end - begin;
      std::vector<uint8_t> touched(n, 0);
      const size_t parts = threadsFor(n);
      auto scan = [&](size_t part) {
        const size_t from = begin + n * part / parts, to = begin + n * (part + 1) / parts;
        for (size_t i = from; i < to; ++i) {
          prefetchAhead(i, to);
          touched[i - begin] = !untouched(i);
        }
      };
      std::vector<std::thread> helpers;
      for (size_t part = 1; part < parts; ++part) helpers.emplace_back(scan, part);
      scan(0);
      for (auto& t : helpers) t.join();
      for (size_t i = begin; i < end; ++i) {
        if (touched[i - begin]) classify(i, missing, odd, moved, grads);
      }
    }
    return {std::move(missing), std::move(odd), std::move(moved), std::move(grads)};
  }

  // p.grad = views[k] for each i = indices[k] (the group's views, put back).
  void setGrads(const Indices& indices, nb::list views) {
    BAGUA_ENFORCE(nb::len(views) == indices.size(),
                  "FlatWatch.set_grads: " + std::to_string(indices.size()) + " indices but " +
                      std::to_string(nb::len(views)) + " views");
    for (size_t k = 0; k < indices.size(); ++k) {
      const size_t i = indices[k];
      BAGUA_ENFORCE(i < params_.size(), "FlatWatch: index " + std::to_string(i) + " of " +
                                            std::to_string(params_.size()) + " parameters");
      nb::object view = views[k];
      const int rc = setter_ != nullptr
                         ? setter_(params_[i].ptr(), view.ptr(), closure_)
                         : PyObject_SetAttrString(params_[i].ptr(), "grad", view.ptr());
      if (rc != 0) throw nb::python_error();
      if (views_.empty()) continue;
      views_[i] = std::move(view);
      if (fields_) viewImpls_[i] = word(addressOf(views_[i]), f_.impl);
    }
  }

  size_t size() const { return params_.size(); }
  bool readsFields() const { return fields_; }

 private:
  // Reads fields from here on if, on this group's parameters, they tell
  // exactly what the accessors tell.
  void enableFields(const Layout& layout) {
    std::tie(f_.impl, f_.storage, f_.offset, f_.meta, f_.grad) = layout;
    viewImpls_.resize(views_.size());
    for (size_t i = 0; i < views_.size(); ++i) viewImpls_[i] = word(addressOf(views_[i]), f_.impl);
    fields_ = true;
    for (size_t i = 0; i < params_.size() && fields_; ++i) {
      Indices missing, odd, moved;
      nb::list grads;
      classify(i, missing, odd, moved, grads);
      fields_ = untouched(i) == (missing.empty() && odd.empty() && moved.empty());
    }
    if (!fields_) viewImpls_.clear();
  }

  // Threads for a pass over n parameters: one per kPerThread, at most
  // kMaxThreads and the machine's CPUs (a thread costs tens of microseconds
  // to start; a parameter 10-100 ns). A piece of a pieced step (25,000
  // parameters, fuse/pipeline.py) gets all four.
  static constexpr size_t kPerThread = 6250;
  static constexpr size_t kMaxThreads = 4;
  static size_t threadsFor(size_t n) {
    const size_t cpus = std::max<size_t>(std::thread::hardware_concurrency(), 1);
    return std::clamp<size_t>(n / kPerThread, 1, std::min(kMaxThreads, cpus));
  }

  // Stage k of parameter i + k * kAhead: its object's TensorImpl pointer
  // (k = 3), that TensorImpl's fields (k = 2), its AutogradMeta's gradient
  // (k = 1). Each stage reads only a link the stage before brought in, and
  // only fields untouched() reads itself.
  static constexpr size_t kAhead = 6;
  void prefetchAhead(size_t i, size_t n) const {
    if (i + 3 * kAhead < n) {
      prefetch(addressOf(params_[i + 3 * kAhead]) + f_.impl);
    }
    if (i + 2 * kAhead < n) {
      const uintptr_t impl = word(addressOf(params_[i + 2 * kAhead]), f_.impl);
      prefetch(impl + f_.storage);
      prefetch(impl + f_.offset);
      prefetch(impl + f_.meta);
    }
    if (i + kAhead < n) {
      const uintptr_t impl = word(addressOf(params_[i + kAhead]), f_.impl);
      const uintptr_t meta = word(impl, f_.meta);
      if (meta != 0) prefetch(meta + f_.grad);
    }
  }

  // True when the fields say: data in its region of the buffer, gradient the view.
  bool untouched(size_t i) const {
    const uintptr_t impl = word(addressOf(params_[i]), f_.impl);
    if (word(impl, f_.storage) != storage_ || word(impl, f_.offset) != offsets_[i]) return false;
    const uintptr_t meta = word(impl, f_.meta);
    return meta != 0 && word(meta, f_.grad) == viewImpls_[i];
  }

  void classify(size_t i, Indices& missing, Indices& odd, Indices& moved, nb::list& grads) const {
    PyObject* p = params_[i].ptr();
    nb::object g = nb::steal(grad(p));
    if (g.is_none()) {
      missing.push_back(i);
    } else if (views_.empty() ? pointer(g.ptr()) != gradPtrs_[i] : !g.is(views_[i])) {
      odd.push_back(i);
      grads.append(g);
    }
    if (pointer(p) != dataPtrs_[i]) moved.push_back(i);
  }

  // A new reference to p.grad.
  PyObject* grad(PyObject* p) const {
    PyObject* g = getter_ != nullptr ? getter_(p, closure_) : PyObject_GetAttrString(p, "grad");
    if (g == nullptr) throw nb::python_error();
    return g;
  }

  uintptr_t pointer(PyObject* t) const {
    PyObject* args[1] = {t};
    PyObject* r = PyObject_Vectorcall(dataPtr_.ptr(), args, 1, nullptr);
    if (r == nullptr) throw nb::python_error();
    void* v = PyLong_AsVoidPtr(r);
    Py_DECREF(r);
    if (v == nullptr && PyErr_Occurred()) throw nb::python_error();
    return reinterpret_cast<uintptr_t>(v);
  }

  std::vector<nb::object> params_, views_;
  std::vector<uintptr_t> gradPtrs_, dataPtrs_, offsets_, viewImpls_;
  // The scan of a pieced step (beginScan).
  std::vector<uint8_t> scanned_;
  std::unique_ptr<std::atomic<uint8_t>[]> blockDone_;
  std::atomic<size_t> nextBlock_{0};
  std::vector<std::thread> helpers_;
  bool scanning_ = false;
  nb::object gradDescr_, dataPtr_;
  getter getter_ = nullptr;
  setter setter_ = nullptr;
  void* closure_ = nullptr;
  PyTypeObject* owner_ = nullptr;
  uintptr_t storage_;
  Fields f_;
  bool fields_ = false;
};

}  // namespace

void bindFlatWatch(nb::module_& m) {
  m.def("find_tensor_layout", &findTensorLayout, "params"_a, "impls"_a, "storages"_a, "offsets"_a,
        "grads"_a, "plain"_a, "plain_impls"_a,
        "Offsets of the fields FlatWatch reads, from probe tensors with known values "
        "(flat_watch.h), or None.");
  nb::class_<FlatWatch>(m, "FlatWatch")
      .def(
          nb::init<nb::list, nb::object, std::vector<uintptr_t>, std::vector<uintptr_t>, nb::object,
                   nb::object, std::optional<Layout>, uintptr_t, std::vector<uintptr_t>>(),
          "params"_a, "grad_views"_a.none(), "grad_ptrs"_a, "data_ptrs"_a, "grad_descr"_a,
          "data_ptr"_a, "layout"_a.none() = nb::none(), "storage"_a = 0,
          "offsets"_a = std::vector<uintptr_t>(),
          "The per-step check of one flat group: grad_views held (identity) or None "
          "(grad_ptrs); data_ptrs where each parameter's data must start; layout, storage "
          "and offsets to read fields (exact checks).")
      .def("check", &FlatWatch::check, "begin"_a = 0, "end"_a = 0,
           "(missing, odd, moved, grads): indices of parameters in [begin, end) (end 0: all) "
           "whose .grad is None, whose .grad is not the group's view (grads: those .grad), "
           "whose data moved.")
      .def("begin_scan", &FlatWatch::beginScan,
           "Helper threads read every parameter's fields in order while check(begin, end) "
           "takes the ranges already read (a pieced step; no-op without fields).")
      .def("end_scan", &FlatWatch::endScan, nb::call_guard<nb::gil_scoped_release>(),
           "Waits for the helper threads of begin_scan.")
      .def("set_grads", &FlatWatch::setGrads, "indices"_a, "views"_a,
           "params[i].grad = views[k] for i = indices[k].")
      .def_prop_ro("reads_fields", &FlatWatch::readsFields)
      .def("__len__", &FlatWatch::size);
}

}  // namespace bagua::python
