// CacheShard: the log, the index and the robust lock of one shard. Every
// public method takes the lock; the private ones run under it.
#include "runtime/data/cache_shard.h"

#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "runtime/common/error.h"

namespace bagua {

struct CacheShard::Header {
  pthread_mutex_t mutex;
  uint64_t head;  // log position (bytes ever appended) where the next record goes
  uint64_t tail;  // log position of the oldest record still in the ring
  CacheShardCounters counters;
};

// A slot is empty when tag == 0; tag is the key's hash with its low bit set.
struct CacheShard::Slot {
  uint64_t tag;
  uint64_t position;
};

struct CacheShard::Record {
  uint32_t kind;
  uint32_t keyBytes;
  uint64_t valueBytes;
  uint64_t hash;
};

namespace {

constexpr uint32_t kEntry = 0x31434552;    // "REC1"
constexpr uint32_t kPadding = 0x31444150;  // "PAD1": the rest of the ring is unused
constexpr uint64_t kAlign = 8;
constexpr uint64_t kHeaderBytes = 128;  // the header, rounded to cache lines

uint64_t alignUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }
uint64_t tagOf(uint64_t hash) { return hash | 1; }
uint64_t homeOf(uint64_t tag, uint64_t mask) { return (tag >> 1) & mask; }

constexpr uint64_t kRecordHeaderBytes = 24;
uint64_t recordBytes(uint64_t keyBytes, uint64_t valueBytes) {
  return alignUp(kRecordHeaderBytes + keyBytes + valueBytes, kAlign);
}

}  // namespace

static_assert(sizeof(pthread_mutex_t) + 2 * sizeof(uint64_t) + sizeof(CacheShardCounters) <=
              kHeaderBytes);

class CacheShard::Lock {
 public:
  explicit Lock(CacheShard& shard) : mutex_(&shard.header()->mutex) {
    int rc = pthread_mutex_lock(mutex_);
    if (rc == EOWNERDEAD) {
      // A process died holding the lock, maybe half way through a put.
      shard.reset();
      shard.header()->counters.recoveries++;
      pthread_mutex_consistent(mutex_);
    } else if (rc != 0) {
      BAGUA_THROW(Error, std::string("cannot lock a cache shard: ") + std::strerror(rc));
    }
  }
  ~Lock() { pthread_mutex_unlock(mutex_); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  pthread_mutex_t* mutex_;
};

uint64_t CacheShard::bytesFor(uint64_t slotCount, uint64_t ringBytes) {
  static_assert(sizeof(Record) == kRecordHeaderBytes);
  return kHeaderBytes + slotCount * sizeof(Slot) + ringBytes;
}

void CacheShard::initialize(uint8_t* base) {
  auto* header = new (base) Header{};
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  // Shared by every process mapping the segment; robust so that a worker
  // killed while holding it does not hang the others.
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  int rc = pthread_mutex_init(&header->mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rc != 0) {
    BAGUA_THROW(Error, std::string("cannot create a cache shard's lock: ") + std::strerror(rc));
  }
}

CacheShard::CacheShard(uint8_t* base, uint64_t slotCount, uint64_t ringBytes)
    : base_(base), slotCount_(slotCount), ringBytes_(ringBytes) {}

CacheShard::Header* CacheShard::header() const { return reinterpret_cast<Header*>(base_); }

CacheShard::Slot* CacheShard::slots() const {
  return reinterpret_cast<Slot*>(base_ + kHeaderBytes);
}

CacheShard::Record* CacheShard::recordAt(uint64_t position) const {
  uint8_t* ring = base_ + kHeaderBytes + slotCount_ * sizeof(Slot);
  return reinterpret_cast<Record*>(ring + position % ringBytes_);
}

bool CacheShard::get(std::string_view key, uint64_t hash, const CacheValueSink& sink) {
  Lock lock(*this);
  uint64_t index = find(key, hash);
  if (index == slotCount_) {
    header()->counters.misses++;
    return false;
  }
  header()->counters.hits++;
  Record* record = recordAt(slots()[index].position);
  uint8_t* to = sink(record->valueBytes);
  if (to != nullptr && record->valueBytes > 0) {
    const uint8_t* from = reinterpret_cast<const uint8_t*>(record + 1) + record->keyBytes;
    std::memcpy(to, from, record->valueBytes);
  }
  return true;
}

CachePutResult CacheShard::put(std::string_view key, uint64_t hash, std::string_view value) {
  const uint64_t need = recordBytes(key.size(), value.size());
  Lock lock(*this);
  Header* h = header();
  if (need > ringBytes_ || key.size() > UINT32_MAX) {
    h->counters.rejected++;
    return CachePutResult::kTooLarge;
  }
  uint64_t old = find(key, hash);
  if (old != slotCount_) {  // the old record stays in the log, dead, until the tail passes it
    Record* stale = recordAt(slots()[old].position);
    h->counters.bytes -= recordBytes(stale->keyBytes, stale->valueBytes);
    h->counters.entries--;
    eraseSlot(old);
  }
  const uint64_t maxEntries = slotCount_ / 4 * 3;
  uint64_t pad = 0;
  for (;;) {
    uint64_t toEnd = ringBytes_ - h->head % ringBytes_;
    pad = toEnd < need ? toEnd : 0;  // a record never straddles the ring's end
    if (h->head + pad + need - h->tail <= ringBytes_ && h->counters.entries < maxEntries) break;
    evictOldest();
  }
  if (pad >= sizeof(Record)) recordAt(h->head)->kind = kPadding;
  h->head += pad;
  Record* record = recordAt(h->head);
  *record = Record{kEntry, static_cast<uint32_t>(key.size()), value.size(), hash};
  auto* bytes = reinterpret_cast<uint8_t*>(record + 1);
  std::memcpy(bytes, key.data(), key.size());
  if (!value.empty()) std::memcpy(bytes + key.size(), value.data(), value.size());
  insertSlot(hash, h->head);
  h->head += need;
  h->counters.entries++;
  h->counters.bytes += need;
  h->counters.inserts++;
  return CachePutResult::kStored;
}

void CacheShard::evictOldest() {
  Header* h = header();
  if (h->tail == h->head) {
    // Empty: start the next record at the ring's beginning, where any record
    // that fits the ring fits.
    h->head = h->tail = alignUp(h->head, ringBytes_);
    return;
  }
  uint64_t toEnd = ringBytes_ - h->tail % ringBytes_;
  if (toEnd < sizeof(Record)) {  // too short for a record: padding without a header
    h->tail += toEnd;
    return;
  }
  Record* record = recordAt(h->tail);
  if (record->kind == kPadding) {
    h->tail += toEnd;
    return;
  }
  if (record->kind != kEntry) {  // cannot happen unless the memory was overwritten
    reset();
    h->counters.recoveries++;
    return;
  }
  uint64_t size = recordBytes(record->keyBytes, record->valueBytes);
  uint64_t index = findPosition(record->hash, h->tail);
  if (index != slotCount_) {  // live (not replaced since)
    eraseSlot(index);
    h->counters.entries--;
    h->counters.bytes -= size;
    h->counters.evictions++;
  }
  h->tail += size;
}

uint64_t CacheShard::find(std::string_view key, uint64_t hash) const {
  const uint64_t mask = slotCount_ - 1;
  const uint64_t tag = tagOf(hash);
  Slot* s = slots();
  for (uint64_t i = homeOf(tag, mask), n = 0; n < slotCount_; i = (i + 1) & mask, ++n) {
    if (s[i].tag == 0) return slotCount_;
    if (s[i].tag != tag) continue;
    const Record* record = recordAt(s[i].position);
    if (record->keyBytes == key.size() && std::memcmp(record + 1, key.data(), key.size()) == 0) {
      return i;
    }
  }
  return slotCount_;
}

uint64_t CacheShard::findPosition(uint64_t hash, uint64_t position) const {
  const uint64_t mask = slotCount_ - 1;
  const uint64_t tag = tagOf(hash);
  Slot* s = slots();
  for (uint64_t i = homeOf(tag, mask), n = 0; n < slotCount_; i = (i + 1) & mask, ++n) {
    if (s[i].tag == 0) return slotCount_;
    if (s[i].tag == tag && s[i].position == position) return i;
  }
  return slotCount_;
}

void CacheShard::insertSlot(uint64_t hash, uint64_t position) {
  const uint64_t mask = slotCount_ - 1;
  const uint64_t tag = tagOf(hash);
  Slot* s = slots();
  uint64_t i = homeOf(tag, mask);
  while (s[i].tag != 0) i = (i + 1) & mask;  // entries < slotCount: a free slot exists
  s[i] = Slot{tag, position};
}

// Linear probing's deletion by backward shift: later slots of the same
// probe run move up, so lookups never need tombstones.
void CacheShard::eraseSlot(uint64_t index) {
  const uint64_t mask = slotCount_ - 1;
  Slot* s = slots();
  uint64_t hole = index;
  for (uint64_t j = (hole + 1) & mask; s[j].tag != 0; j = (j + 1) & mask) {
    uint64_t home = homeOf(s[j].tag, mask);
    bool staysPut = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (staysPut) continue;
    s[hole] = s[j];
    hole = j;
  }
  s[hole] = Slot{0, 0};
}

void CacheShard::reset() {
  Header* h = header();
  std::memset(static_cast<void*>(slots()), 0, slotCount_ * sizeof(Slot));
  h->head = h->tail = 0;
  h->counters.entries = 0;
  h->counters.bytes = 0;
}

void CacheShard::clear() {
  Lock lock(*this);
  reset();
}

CacheShardCounters CacheShard::counters() {
  Lock lock(*this);
  return header()->counters;
}

}  // namespace bagua
