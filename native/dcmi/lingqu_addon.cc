// The 910A3 switch library `liblingqu-dcmi.so` (dcmi-abi.md §8, spec L.9) for JavaScript: `LingquLibrary`.
//
// Loading follows libdcmi's rules (dcmi-abi.md §1.3): dlopen(RTLD_LAZY | RTLD_GLOBAL), every symbol resolved on
// its own, a missing one reported by missingSymbols() and answered with FUNCTION_NOT_FOUND (-99998) when called.
// No policy here: the codes are assembled and levelled in TypeScript (src/kube/device-info-switch.ts).
//
// The fault callback `void(*)(struct LqDcmiEvent *)` has no user-data pointer, so it reaches its listener through
// one process-wide queue (the one global, as for DCMI's callback in fault_channel.cc): the trampoline copies the
// event into a bounded queue under a mutex and wakes the JavaScript thread with a thread-safe function; it never
// calls into JavaScript. Events that do not fit are counted and handed to the listener as `dropped`, so the agent
// re-reads the whole fault list (nothing is lost silently).
//
// The fault query can block in a real driver, so it runs on the libuv pool and returns a promise. The library is
// never dlclose'd (as libdcmi: a vendor library whose threads may still run cannot be unloaded safely).
#include <dlfcn.h>
#include <napi.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lingqu_abi.h"

namespace lingqu_addon {
namespace {

constexpr int kFunctionNotFound = -99998;  // dcmi-abi.md §1.3
constexpr int kLoadFailed = -99999;
constexpr size_t kMaxQueued = 1024;

using InitFn = int (*)();
using SubscribeFn = int (*)(struct lq_dcmi_event_filter, LqDcmiFaultEventCallback);
using QueryFn = int (*)(unsigned int, unsigned int*, struct LqDcmiEvent*);

struct Handle {
  void* dl = nullptr;
  InitFn init = nullptr;
  SubscribeFn subscribe = nullptr;
  QueryFn query = nullptr;
};

// The process-wide listener queue (see the file comment). Never freed: the library may call the trampoline at
// any time, even during process exit.
struct EventQueue {
  std::mutex mu;
  bool active = false;
  bool pending = false;  // a wake-up is queued towards JavaScript
  std::deque<LqDcmiEvent> events;
  uint64_t dropped = 0;
  Napi::ThreadSafeFunction tsfn;
};

EventQueue& TheQueue() {
  static EventQueue* q = new EventQueue();
  return *q;
}

void Drain(Napi::Env env, Napi::Function listener);

void CallDrain(Napi::Env env, Napi::Function js) {
  if (env != nullptr && js != nullptr) Drain(env, js);
}

void Trampoline(struct LqDcmiEvent* event) noexcept {
  if (event == nullptr) return;
  EventQueue& q = TheQueue();
  std::lock_guard<std::mutex> lock(q.mu);
  if (!q.active) return;
  if (q.events.size() >= kMaxQueued) {
    q.dropped++;
  } else {
    q.events.push_back(*event);
  }
  if (!q.pending && q.tsfn.NonBlockingCall(CallDrain) == napi_ok) q.pending = true;
}

Napi::Object EventObject(Napi::Env env, const LqDcmiEvent& e) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("eventType", Napi::Number::New(env, static_cast<uint32_t>(e.eventType)));
  o.Set("subType", Napi::Number::New(env, e.subType));
  o.Set("peerPortDevice", Napi::Number::New(env, e.peerportDevice));
  o.Set("peerPortId", Napi::Number::New(env, e.peerportId));
  o.Set("switchChipId", Napi::Number::New(env, e.switchChipid));
  o.Set("switchPortId", Napi::Number::New(env, e.switchPortid));
  o.Set("severity", Napi::Number::New(env, e.severity));
  o.Set("assertion", Napi::Number::New(env, e.assertion));
  o.Set("eventSerialNum", Napi::Number::New(env, e.eventSerialNum));
  o.Set("notifySerialNum", Napi::Number::New(env, e.notifySerialNum));
  o.Set("alarmRaisedTime", Napi::Number::New(env, static_cast<double>(e.alarmRaisedTime)));
  return o;
}

// JavaScript thread: hands everything queued to the listener as (events[], dropped).
void Drain(Napi::Env env, Napi::Function listener) {
  std::deque<LqDcmiEvent> batch;
  uint64_t dropped = 0;
  {
    EventQueue& q = TheQueue();
    std::lock_guard<std::mutex> lock(q.mu);
    q.pending = false;
    batch.swap(q.events);
    dropped = q.dropped;
    q.dropped = 0;
  }
  if (batch.empty() && dropped == 0) return;
  Napi::Array arr = Napi::Array::New(env, batch.size());
  for (size_t i = 0; i < batch.size(); ++i) arr.Set(static_cast<uint32_t>(i), EventObject(env, batch[i]));
  listener.Call({arr, Napi::Number::New(env, static_cast<double>(dropped))});
}

class QueryWorker : public Napi::AsyncWorker {
 public:
  QueryWorker(Napi::Env env, std::shared_ptr<Handle> handle)
      : Napi::AsyncWorker(env), handle_(std::move(handle)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    if (handle_->query == nullptr) {
      rc_ = kFunctionNotFound;
      return;
    }
    events_.assign(LQ_MAX_FAULTS, LqDcmiEvent{});
    unsigned int count = 0;
    rc_ = handle_->query(LQ_MAX_FAULTS, &count, events_.data());
    count_ = count;
  }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object r = Napi::Object::New(env);
    r.Set("rc", Napi::Number::New(env, rc_));
    // upstream rejects a count outside [0, listLen]: reported as such, the caller decides (spec L.9)
    r.Set("count", Napi::Number::New(env, count_));
    Napi::Array arr = Napi::Array::New(env);
    if (rc_ == 0 && count_ <= LQ_MAX_FAULTS) {
      for (uint32_t i = 0; i < count_; ++i) arr.Set(i, EventObject(env, events_[i]));
    }
    r.Set("events", arr);
    deferred_.Resolve(r);
  }

 private:
  std::shared_ptr<Handle> handle_;
  Napi::Promise::Deferred deferred_;
  std::vector<LqDcmiEvent> events_;
  int rc_ = 0;
  uint32_t count_ = 0;
};

class LingquLibrary : public Napi::ObjectWrap<LingquLibrary> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "LingquLibrary",
                       {
                           InstanceMethod("missingSymbols", &LingquLibrary::MissingSymbols),
                           InstanceMethod("init", &LingquLibrary::Init),
                           InstanceMethod("subscribe", &LingquLibrary::Subscribe),
                           InstanceMethod("unsubscribe", &LingquLibrary::Unsubscribe),
                           InstanceMethod("queryFaults", &LingquLibrary::QueryFaults),
                       });
  }

  explicit LingquLibrary(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LingquLibrary>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) {
      Napi::TypeError::New(env, "path must be a string").ThrowAsJavaScriptException();
      return;
    }
    std::string path = info[0].As<Napi::String>().Utf8Value();
    if (path.empty()) {
      Error(env, kLoadFailed, "dlopen failed: empty library path").ThrowAsJavaScriptException();
      return;
    }
    void* dl = dlopen(path.c_str(), RTLD_LAZY | RTLD_GLOBAL);
    if (dl == nullptr) {
      const char* reason = dlerror();
      Error(env, kLoadFailed, std::string("dlopen failed: ") + (reason ? reason : "unknown error"))
          .ThrowAsJavaScriptException();
      return;
    }
    handle_ = std::make_shared<Handle>();
    handle_->dl = dl;
    handle_->init = reinterpret_cast<InitFn>(dlsym(dl, "lq_dcmi_init"));
    handle_->subscribe = reinterpret_cast<SubscribeFn>(dlsym(dl, "lq_dcmi_subscribe_fault_event"));
    handle_->query = reinterpret_cast<QueryFn>(dlsym(dl, "lq_dcmi_get_fault_info"));
  }

 private:
  static Napi::Error Error(Napi::Env env, int code, const std::string& message) {
    Napi::Error e = Napi::Error::New(env, message);
    e.Set("code", Napi::Number::New(env, code));
    return e;
  }

  Napi::Value MissingSymbols(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Array out = Napi::Array::New(env);
    uint32_t n = 0;
    if (!handle_->init) out.Set(n++, "lq_dcmi_init");
    if (!handle_->subscribe) out.Set(n++, "lq_dcmi_subscribe_fault_event");
    if (!handle_->query) out.Set(n++, "lq_dcmi_get_fault_info");
    return out;
  }

  Napi::Value Init(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), handle_->init ? handle_->init() : kFunctionNotFound);
  }

  // subscribe(listener(events, dropped)): installs the listener, then calls the library with a zero filter
  // (dcmi-abi.md §8). Returns the library's code; on failure the listener is removed again.
  Napi::Value Subscribe(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsFunction()) {
      Napi::TypeError::New(env, "listener must be a function").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    if (!handle_->subscribe) return Napi::Number::New(env, kFunctionNotFound);
    StopListening();
    Napi::ThreadSafeFunction tsfn =
        Napi::ThreadSafeFunction::New(env, info[0].As<Napi::Function>(), "lingqu fault events", 0, 1);
    tsfn.Unref(env);
    {
      EventQueue& q = TheQueue();
      std::lock_guard<std::mutex> lock(q.mu);
      q.tsfn = tsfn;
      q.active = true;
      q.pending = false;
      q.events.clear();
      q.dropped = 0;
    }
    struct lq_dcmi_event_filter filter {};
    int rc = handle_->subscribe(filter, Trampoline);
    if (rc != 0) StopListening();
    return Napi::Number::New(env, rc);
  }

  static void StopListening() {
    EventQueue& q = TheQueue();
    std::lock_guard<std::mutex> lock(q.mu);
    if (!q.active) return;
    q.active = false;
    q.events.clear();
    q.tsfn.Release();
  }

  // The library has no unsubscribe call: events that still arrive are discarded.
  Napi::Value Unsubscribe(const Napi::CallbackInfo& info) {
    StopListening();
    return info.Env().Undefined();
  }

  Napi::Value QueryFaults(const Napi::CallbackInfo& info) {
    auto* worker = new QueryWorker(info.Env(), handle_);
    Napi::Promise p = worker->Promise();
    worker->Queue();
    return p;
  }

  std::shared_ptr<Handle> handle_;
};

}  // namespace

// Adds `LingquLibrary` to the addon's exports (called from dcmi_addon.cc).
void Register(Napi::Env env, Napi::Object exports) { exports.Set("LingquLibrary", LingquLibrary::Define(env)); }

}  // namespace lingqu_addon
