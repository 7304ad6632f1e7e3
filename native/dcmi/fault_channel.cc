// Fault-event delivery path (see fault_channel.h for the model).
//
// Library thread (Trampoline): copy the event by value, stamp CLOCK_MONOTONIC, and under g_mutex either append
// it to the current channel's ring (in-flight < max_queue) or record an overflow (logic-ID bit + dropped count,
// plus one notice item if none is outstanding). The ring needs no allocation per event: it grows by doubling
// and is reused. The thread-safe function only carries wake-up tokens (data = nullptr, at most one pending per
// channel), so a burst costs one wake-up, not one queue node per event; the trampoline never calls into
// JavaScript and holds the mutex only for a copy and a non-blocking napi_call_threadsafe_function.
//
// JS thread (CallJs): pop an item under the mutex and, without the mutex, build the record and call the listener
// (which may unsubscribe, re-subscribe or close the library from inside); re-queue the token while items remain.
// Replacing a listener moves the events still queued for the old one to the new one, in order.
//
// Lifetime: a channel is freed only in its TSFN finalizer, which first detaches it from g_current under the
// mutex, so the trampoline never sees a dangling channel; a channel is released exactly once (JS thread). Items
// still queued when a channel is deactivated are discarded without calling JavaScript; that is the only
// discard, and it happens only when the listener is gone (unsubscribe, close, GC, environment teardown).
#include "fault_channel.h"

#include <time.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace dcmi_fault {
namespace {

constexpr uint32_t kEventItem = 0;
constexpr uint32_t kNoticeItem = 1;
// `deviceid` is an unsigned short: one overflow bit per possible value, so every ID is named exactly.
constexpr size_t kIdWords = 65536 / 64;
// Records delivered per TSFN dispatch. One: Node runs microtasks and nextTicks after every record, as after any
// callback from the loop, and yields to timers and I/O every 1000 dispatches even under a fault storm. Larger
// batches were not faster at the design rates (lossless at 100k records/s either way on a 2-core machine).
constexpr unsigned kBatch = 1;
constexpr size_t kInitialRing = 64;
// A drained ring larger than this is freed, so a burst does not pin its peak memory.
constexpr size_t kKeepRing = 4096;

struct Item {
  uint32_t kind;
  uint64_t trampoline_ns;
  struct dcmi_dms_fault_event event;
};

// FIFO of Items with power-of-two capacity; guarded by g_mutex.
class Ring {
 public:
  Ring() = default;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  ~Ring() { delete[] items_; }

  bool Empty() const { return size_ == 0; }

  // A slot at the tail, or nullptr if memory is exhausted.
  Item* Emplace() {
    if (size_ == capacity_ && !Grow()) return nullptr;
    Item* slot = &items_[(head_ + size_) & (capacity_ - 1)];
    ++size_;
    return slot;
  }

  void PopBack() { --size_; }

  bool Pop(Item* out) {
    if (size_ == 0) return false;
    *out = items_[head_];
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
    return true;
  }

  void ShrinkIfEmpty() {
    if (size_ != 0 || capacity_ <= kKeepRing) return;
    delete[] items_;
    items_ = nullptr;
    capacity_ = head_ = 0;
  }

  void Swap(Ring& other) {
    std::swap(items_, other.items_);
    std::swap(capacity_, other.capacity_);
    std::swap(head_, other.head_);
    std::swap(size_, other.size_);
  }

 private:
  bool Grow() {
    const size_t capacity = capacity_ == 0 ? kInitialRing : capacity_ * 2;
    Item* items = new (std::nothrow) Item[capacity];
    if (items == nullptr) return false;
    for (size_t i = 0; i < size_; ++i) items[i] = items_[(head_ + i) & (capacity_ - 1)];
    delete[] items_;
    items_ = items;
    capacity_ = capacity;
    head_ = 0;
    return true;
  }

  Item* items_ = nullptr;
  size_t capacity_ = 0;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace

struct Channel {
  explicit Channel(uint32_t max) : max_queue(max) {
    for (auto& word : overflow_ids) word.store(0, std::memory_order_relaxed);
  }

  napi_threadsafe_function tsfn = nullptr;
  const uint32_t max_queue;
  // Guarded by g_mutex.
  bool active = true;
  bool wake_pending = false;  // a wake-up token is queued in the TSFN
  Ring ring;
  // JS thread only.
  bool released = false;
  // Written under g_mutex; atomic so that readers outside it see whole values.
  std::atomic<uint32_t> in_flight{0};  // event items in `ring`
  std::atomic<bool> notice_pending{false};
  std::atomic<uint64_t> overflow_dropped{0};
  std::atomic<uint64_t> overflow_ids[kIdWords];
};

namespace {

// The process-wide trampoline target (see fault_channel.h). g_mutex guards g_current, g_owner and every
// channel's ring/flags; it is never held while JavaScript or the DCMI library runs. std::mutex is constant-
// initialised and trivially destructible here, so a library thread firing during process exit is harmless.
std::mutex g_mutex;
Channel* g_current = nullptr;
const void* g_owner = nullptr;

std::atomic<uint64_t> g_delivered{0};
std::atomic<uint64_t> g_dropped{0};
std::atomic<uint64_t> g_in_flight{0};
std::atomic<uint64_t> g_after_unsubscribe{0};

uint64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock of process.hrtime.bigint()
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// Queues a wake-up token unless one is pending. Fails only while the TSFN is closing (environment teardown).
bool WakeLocked(Channel* ch) {
  if (ch->wake_pending) return true;
  if (napi_call_threadsafe_function(ch->tsfn, nullptr, napi_tsfn_nonblocking) != napi_ok) return false;
  ch->wake_pending = true;
  return true;
}

void QueueNoticeLocked(Channel* ch) {
  if (ch->notice_pending.exchange(true)) return;  // at most one notice outstanding
  Item* slot = ch->ring.Emplace();
  if (slot != nullptr) {
    slot->kind = kNoticeItem;
    if (WakeLocked(ch)) return;
    ch->ring.PopBack();
  }
  ch->notice_pending.store(false);  // the bits stay set; the next overflow tries again
}

void OverflowLocked(Channel* ch, unsigned logic_id) {
  ch->overflow_ids[logic_id / 64].fetch_or(uint64_t{1} << (logic_id % 64), std::memory_order_relaxed);
  ch->overflow_dropped.fetch_add(1, std::memory_order_relaxed);
  g_dropped.fetch_add(1, std::memory_order_relaxed);
  QueueNoticeLocked(ch);
}

// Detaches the channel's content: queued events are discarded (the listener is gone).
void DeactivateLocked(Channel* ch) {
  ch->active = false;
  Item item;
  while (ch->ring.Pop(&item)) {
    if (item.kind != kEventItem) continue;
    ch->in_flight.fetch_sub(1, std::memory_order_relaxed);
    g_in_flight.fetch_sub(1, std::memory_order_relaxed);
    g_after_unsubscribe.fetch_add(1, std::memory_order_relaxed);
  }
  ch->ring.ShrinkIfEmpty();
}

// Moves everything queued in `src` into `dst` (src's items first when src_first), with its overflow state.
void MergeLocked(Channel* dst, Channel* src, bool src_first) {
  Ring merged;
  Ring& first = src_first ? src->ring : dst->ring;
  Ring& second = src_first ? dst->ring : src->ring;
  uint32_t events = 0;
  bool lost = false;
  Item item;
  for (Ring* ring : {&first, &second}) {
    while (ring->Pop(&item)) {
      Item* slot = merged.Emplace();
      if (slot != nullptr) {
        *slot = item;
        if (item.kind == kEventItem) ++events;
      } else if (item.kind == kEventItem) {  // out of memory: account it as an overflow of dst
        dst->overflow_ids[item.event.deviceid / 64].fetch_or(uint64_t{1} << (item.event.deviceid % 64));
        dst->overflow_dropped.fetch_add(1);
        g_dropped.fetch_add(1);
        g_in_flight.fetch_sub(1);
        lost = true;
      }
    }
  }
  dst->ring.Swap(merged);
  dst->in_flight.store(events);
  src->in_flight.store(0);
  for (size_t w = 0; w < kIdWords; ++w) {
    const uint64_t bits = src->overflow_ids[w].exchange(0, std::memory_order_relaxed);
    if (bits != 0) dst->overflow_ids[w].fetch_or(bits, std::memory_order_relaxed);
  }
  const uint64_t src_dropped = src->overflow_dropped.exchange(0);
  dst->overflow_dropped.fetch_add(src_dropped);
  if (src->notice_pending.exchange(false)) dst->notice_pending.store(true);  // its notice item moved along
  if (src_dropped != 0 || lost) QueueNoticeLocked(dst);
  src->active = false;
  if (!dst->ring.Empty()) WakeLocked(dst);
}

void Release(Channel* ch) {
  if (ch->released) return;
  ch->released = true;
  napi_release_threadsafe_function(ch->tsfn, napi_tsfn_release);
}

void ClearPendingException(napi_env env) {
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) == napi_ok && pending) {
    napi_value ignored;
    napi_get_and_clear_last_exception(env, &ignored);
  }
}

std::string Describe(napi_env env, napi_value value) {
  napi_value text;
  if (napi_coerce_to_string(env, value, &text) != napi_ok) {
    ClearPendingException(env);
    return "<unprintable value>";
  }
  size_t length = 0;
  if (napi_get_value_string_utf8(env, text, nullptr, 0, &length) != napi_ok) return "<unprintable value>";
  std::string out(length, '\0');
  napi_get_value_string_utf8(env, text, &out[0], length + 1, &length);
  return out;
}

// A throwing listener must neither stop later deliveries nor vanish silently: the exception becomes a
// process warning (`process.emitWarning`, type DcmiFaultListenerWarning, detail = its stack).
void ReportListenerError(napi_env env, napi_value exception) {
  napi_value global, process, emit_warning;
  if (napi_get_global(env, &global) != napi_ok ||
      napi_get_named_property(env, global, "process", &process) != napi_ok ||
      napi_get_named_property(env, process, "emitWarning", &emit_warning) != napi_ok) {
    ClearPendingException(env);
    return;
  }
  const std::string message = "fault listener threw: " + Describe(env, exception);
  napi_value args[2];
  napi_value type;
  napi_create_string_utf8(env, message.c_str(), message.size(), &args[0]);
  napi_create_object(env, &args[1]);
  napi_create_string_utf8(env, "DcmiFaultListenerWarning", NAPI_AUTO_LENGTH, &type);
  napi_set_named_property(env, args[1], "type", type);
  napi_valuetype kind;
  napi_value stack;
  if (napi_typeof(env, exception, &kind) == napi_ok && kind == napi_object) {
    if (napi_get_named_property(env, exception, "stack", &stack) == napi_ok &&
        napi_typeof(env, stack, &kind) == napi_ok && kind == napi_string) {
      napi_set_named_property(env, args[1], "detail", stack);
    }
    ClearPendingException(env);  // a throwing `stack` getter
  }
  napi_value result;
  if (napi_call_function(env, process, emit_warning, 2, args, &result) != napi_ok) ClearPendingException(env);
}

void CallListener(napi_env env, napi_value listener, napi_value record) {
  napi_value receiver, result;
  napi_get_undefined(env, &receiver);
  if (napi_call_function(env, receiver, listener, 1, &record, &result) == napi_ok) return;
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) != napi_ok || !pending) return;
  napi_value exception;
  if (napi_get_and_clear_last_exception(env, &exception) == napi_ok) ReportListenerError(env, exception);
}

void DeliverEvent(napi_env env, napi_value listener, const Item& item) {
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  try {
    Napi::Env e(env);
    const struct dcmi_dms_fault_event& ev = item.event;
    const void* name_end = std::memchr(ev.event_name, '\0', sizeof ev.event_name);
    const size_t name_length =
        name_end ? static_cast<size_t>(static_cast<const char*>(name_end) - ev.event_name) : sizeof ev.event_name;
    Napi::Object record = Napi::Object::New(e);
    record.Set("kind", Napi::String::New(e, "fault"));
    record.Set("eventId", Napi::Number::New(e, ev.event_id));
    record.Set("deviceId", Napi::Number::New(e, ev.deviceid));
    record.Set("nodeType", Napi::Number::New(e, ev.node_type));
    record.Set("nodeId", Napi::Number::New(e, ev.node_id));
    record.Set("subNodeType", Napi::Number::New(e, ev.sub_node_type));
    record.Set("subNodeId", Napi::Number::New(e, ev.sub_node_id));
    record.Set("severity", Napi::Number::New(e, ev.severity));
    record.Set("assertion", Napi::Number::New(e, ev.assertion));
    record.Set("eventSerialNum", Napi::Number::New(e, ev.event_serial_num));
    record.Set("notifySerialNum", Napi::Number::New(e, ev.notify_serial_num));
    record.Set("alarmRaisedTime", Napi::Number::New(e, static_cast<double>(ev.alarm_raised_time)));
    record.Set("eventName", Napi::String::New(e, ev.event_name, name_length));
    record.Set("additionalInfo", Napi::Buffer<uint8_t>::Copy(e, reinterpret_cast<const uint8_t*>(ev.additional_info),
                                                             sizeof ev.additional_info));
    record.Set("trampolineNs", Napi::BigInt::New(e, item.trampoline_ns));
    g_delivered.fetch_add(1, std::memory_order_relaxed);
    CallListener(env, listener, record);
  } catch (const Napi::Error&) {
    // Building the record failed, which only happens while the environment shuts down.
  }
  napi_close_handle_scope(env, scope);
}

void DeliverNotice(napi_env env, napi_value listener, const std::vector<uint32_t>& ids, uint64_t dropped) {
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  try {
    Napi::Env e(env);
    Napi::Array logic_ids = Napi::Array::New(e, ids.size());
    for (size_t i = 0; i < ids.size(); ++i) logic_ids.Set(static_cast<uint32_t>(i), Napi::Number::New(e, ids[i]));
    Napi::Object record = Napi::Object::New(e);
    record.Set("kind", Napi::String::New(e, "overflow"));
    record.Set("logicIds", logic_ids);
    record.Set("dropped", Napi::Number::New(e, static_cast<double>(dropped)));
    CallListener(env, listener, record);
  } catch (const Napi::Error&) {
  }
  napi_close_handle_scope(env, scope);
}

void CallJs(napi_env env, napi_value listener, void* context, void* /*data: always a wake-up token*/) {
  // env == nullptr: the TSFN is emptied during environment teardown; the channel may already be freed.
  if (env == nullptr || listener == nullptr) return;
  Channel* ch = static_cast<Channel*>(context);
  std::vector<uint32_t> ids;
  for (unsigned handled = 0;; ++handled) {
    Item item;
    uint64_t dropped = 0;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (!ch->active) return;  // unsubscribed or replaced (possibly by the listener we just called)
      if (ch->ring.Empty()) {
        ch->wake_pending = false;
        ch->ring.ShrinkIfEmpty();
        return;
      }
      if (handled == kBatch) {  // more to do: re-queue the token (it stays pending) and return to Node
        if (napi_call_threadsafe_function(ch->tsfn, nullptr, napi_tsfn_nonblocking) != napi_ok) {
          ch->wake_pending = false;
        }
        return;
      }
      ch->ring.Pop(&item);
      if (item.kind == kEventItem) {
        ch->in_flight.fetch_sub(1, std::memory_order_relaxed);
        g_in_flight.fetch_sub(1, std::memory_order_relaxed);
      } else {
        // Clear the flag first, then take the bits: an overflow after this point queues a new notice.
        ch->notice_pending.store(false);
        ids.clear();
        for (size_t w = 0; w < kIdWords; ++w) {
          if (ch->overflow_ids[w].load(std::memory_order_relaxed) == 0) continue;
          uint64_t bits = ch->overflow_ids[w].exchange(0, std::memory_order_relaxed);
          for (unsigned b = 0; bits != 0; ++b, bits >>= 1) {
            if (bits & 1) ids.push_back(static_cast<uint32_t>(w * 64 + b));
          }
        }
        dropped = ch->overflow_dropped.exchange(0);
      }
    }
    if (item.kind == kEventItem) {
      DeliverEvent(env, listener, item);
    } else if (dropped != 0 || !ids.empty()) {
      DeliverNotice(env, listener, ids, dropped);
    }
  }
}

void FinalizeChannel(napi_env /*env*/, void* data, void* /*hint*/) {
  Channel* ch = static_cast<Channel*>(data);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_current == ch) {  // only at environment teardown: a live subscription is never released otherwise
      g_current = nullptr;
      g_owner = nullptr;
    }
    DeactivateLocked(ch);
  }
  delete ch;
}

}  // namespace

void Trampoline(struct dcmi_event* fault_event) noexcept {
  if (fault_event == nullptr) return;
  const uint64_t now = MonotonicNs();
  const struct dcmi_dms_fault_event& ev = fault_event->event_t.dms_event;
  std::lock_guard<std::mutex> lock(g_mutex);
  Channel* ch = g_current;
  if (ch == nullptr) {
    g_after_unsubscribe.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const unsigned logic_id = ev.deviceid;
  if (ch->in_flight.load(std::memory_order_relaxed) < ch->max_queue) {
    Item* slot = ch->ring.Emplace();
    if (slot != nullptr) {
      slot->kind = kEventItem;
      slot->trampoline_ns = now;
      std::memcpy(&slot->event, &ev, sizeof slot->event);
      ch->in_flight.fetch_add(1, std::memory_order_relaxed);
      g_in_flight.fetch_add(1, std::memory_order_relaxed);
      if (WakeLocked(ch)) return;
      // The TSFN is closing: the event cannot be queued, so it is accounted as an overflow.
      ch->ring.PopBack();
      ch->in_flight.fetch_sub(1, std::memory_order_relaxed);
      g_in_flight.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  OverflowLocked(ch, logic_id);
}

Channel* CreateChannel(Napi::Env env, Napi::Function listener, uint32_t max_queue) {
  std::unique_ptr<Channel> ch(new Channel(max_queue));
  napi_value name;
  napi_status status = napi_create_string_utf8(env, "dcmiFaultEvents", NAPI_AUTO_LENGTH, &name);
  if (status == napi_ok) {
    // max_queue_size 0: the TSFN queue is unbounded (it holds at most one token per channel anyway).
    status = napi_create_threadsafe_function(env, listener, nullptr, name, 0, 1, ch.get(), FinalizeChannel, ch.get(),
                                             CallJs, &ch->tsfn);
  }
  if (status != napi_ok) throw Napi::Error::New(env, "napi_create_threadsafe_function failed");
  Channel* raw = ch.release();  // from here on freed by FinalizeChannel
  napi_unref_threadsafe_function(env, raw->tsfn);
  return raw;
}

Previous Install(Channel* channel, const void* owner) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Previous previous{g_current, g_owner};
  g_current = channel;
  g_owner = owner;
  return previous;
}

void Commit(const Previous& previous, Channel* installed) {
  if (previous.channel == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    MergeLocked(installed, previous.channel, true);
  }
  Release(previous.channel);
}

void Rollback(const Previous& previous, Channel* installed) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_current = previous.channel;
    g_owner = previous.owner;
    if (previous.channel != nullptr) {
      MergeLocked(previous.channel, installed, false);
    } else {
      DeactivateLocked(installed);
    }
  }
  Release(installed);
}

bool Unsubscribe(const void* owner) {
  Channel* ch;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_current == nullptr || g_owner != owner) return false;
    ch = g_current;
    g_current = nullptr;
    g_owner = nullptr;
    DeactivateLocked(ch);
  }
  Release(ch);
  return true;
}

Stats GetStats() {
  return Stats{g_delivered.load(), g_dropped.load(), g_in_flight.load(), g_after_unsubscribe.load()};
}

}  // namespace dcmi_fault
