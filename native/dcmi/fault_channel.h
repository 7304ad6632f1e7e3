// Delivery of DCMI fault callbacks (dcmi-abi.md §5) from the library's thread to a JavaScript listener.
//
// DCMI's handler `void(*)(struct dcmi_event *)` carries no user-data pointer, so the trampoline can only find
// its target through process-wide state: the "current channel" below. It is the one global the design accepts
// (architecture §2). A channel is one listener: its Napi thread-safe function (Unref'd, so it never keeps the
// process alive), a bounded queue of copied events, and the overflow bookkeeping that replaces events that did
// not fit. The most recent subscriber owns the current channel; `owner` is an opaque token (the DcmiLibrary).
//
// Every function except Trampoline runs on the JavaScript thread.
#ifndef ASCEND_NPU_AGENT_FAULT_CHANNEL_H
#define ASCEND_NPU_AGENT_FAULT_CHANNEL_H

#include <napi.h>

#include <cstdint>

#include "dcmi_abi.h"

namespace dcmi_fault {

struct Channel;

// Handed to dcmi_subscribe_fault_event; runs on the library's thread and never calls into JavaScript.
void Trampoline(struct dcmi_event* fault_event) noexcept;

// A channel for `listener` that allows `max_queue` events in flight. Throws Napi::Error if N-API fails.
Channel* CreateChannel(Napi::Env env, Napi::Function listener, uint32_t max_queue);

struct Previous {
  Channel* channel;
  const void* owner;
};

// Makes `channel` current (owned by `owner`) before the library is called, so that no event fired during or
// right after dcmi_subscribe_fault_event misses it. Returns what was current.
Previous Install(Channel* channel, const void* owner);

// The library accepted the subscription: events still queued for the previous listener move (in order, ahead
// of newer ones) to the new channel, and the previous channel is released.
void Commit(const Previous& previous, Channel* installed);

// The library refused: the previous channel becomes current again (taking over anything that reached
// `installed` meanwhile) and `installed` is released.
void Rollback(const Previous& previous, Channel* installed);

// Releases the current channel if `owner` owns it; its queued items are discarded without calling JavaScript
// (the listener is gone). Returns whether anything was released. Idempotent.
bool Unsubscribe(const void* owner);

struct Stats {
  uint64_t delivered;          // fault records handed to a listener
  uint64_t dropped;            // events that did not fit the queue (reported through overflow notices)
  uint64_t in_flight;          // events queued towards JavaScript right now
  uint64_t after_unsubscribe;  // events that arrived with no listener, or were discarded by an unsubscribe
};

// Process-wide counters since the addon was loaded.
Stats GetStats();

}  // namespace dcmi_fault

#endif
