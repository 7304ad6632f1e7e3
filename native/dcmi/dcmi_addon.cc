// N-API binding of libdcmi.so: `DcmiLibrary` and `boundFunctions`, exactly as declared in src/dcmi/bindings.ts.
//
// Thin on purpose (architecture §2): marshal the arguments, call the C function through the pointer resolved with
// dlsym, return plain values or throw an Error carrying the DCMI return code. The functions that may block
// (init, reset, boot status, network health, ...) run on the libuv thread pool and return Promises. Per-function
// conventions (buffer sizes, pre-set inputs) follow spec/dcmi-abi.md §4; the fault subscription (§5) lives in
// fault_channel.cc. The second API generation (`dcmiv2_*`, Ascend910A5, dcmi_abi_v2.h) is bound beside the first as
// the `v2*` methods: one `devId` argument in place of (cardId, deviceId), the same marshalling otherwise; which
// generation to call is decided in TypeScript (src/dcmi/dcmi.ts).
#include <dlfcn.h>
#include <napi.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dcmi_abi.h"
#include "dcmi_abi_v2.h"
#include "fault_channel.h"
#include "napi_util.h"

namespace dcmi_addon {
namespace {

constexpr uint32_t kDefaultMaxQueue = 65536;
constexpr double kMaxSafeInteger = 9007199254740991.0;

// Enum outputs are read as their 4-byte representation: the library may return values outside the enumerators
// (boot status 16, dcmi-abi.md §4.7), which a C++ enum object need not be able to hold.
static_assert(sizeof(enum dcmi_boot_status) == sizeof(unsigned int), "enum size");
static_assert(sizeof(enum dcmi_unit_type) == sizeof(unsigned int), "enum size");
static_assert(sizeof(enum dcmi_rdfx_detect_result) == sizeof(unsigned int), "enum size");
static_assert(sizeof(enum dcmi_ip_addr_type) == sizeof(unsigned int), "enum size");

// One dlopen handle and its symbols. Shared with pending asynchronous calls, so close() during a call defers the
// dlclose to the moment the last call has returned (all copies are made and dropped on the JS thread).
struct LibHandle {
  void* dl = nullptr;
  bool dlclose_when_released = false;
#define DCMI_SYMBOL_FIELD(name, params) decltype(&::name) name = nullptr;
  DCMI_BOUND_FUNCTIONS(DCMI_SYMBOL_FIELD)
  DCMI_V2_FUNCTIONS(DCMI_SYMBOL_FIELD)
#undef DCMI_SYMBOL_FIELD
  int (*mock_dcmi_configure)(const char* scenario_path, const char* control_path) = nullptr;

  LibHandle() = default;
  LibHandle(const LibHandle&) = delete;
  LibHandle& operator=(const LibHandle&) = delete;
  ~LibHandle() {
    if (dl != nullptr && dlclose_when_released) dlclose(dl);
  }
};

Napi::Error ClosedError(Napi::Env env, const char* fn) {
  return MakeDcmiError(env, DCMI_WRAP_LOAD_FAILED, fn, "library closed");
}

void Check(Napi::Env env, int rc, const char* fn) {
  if (rc != 0) throw MakeCallError(env, rc, fn);
}

Napi::Promise Rejected(Napi::Env env, const Napi::Error& error) {
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  deferred.Reject(error.Value());
  return deferred.Promise();
}

uint32_t RawEnum(const void* field) {
  uint32_t value;
  std::memcpy(&value, field, sizeof value);
  return value;
}

Napi::Object IpObject(Napi::Env env, const struct dcmi_ip_addr& ip) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("bytes", Napi::Buffer<uint8_t>::Copy(env, ip.u_addr.ip6, sizeof ip.u_addr.ip6));
  out.Set("ipType", Napi::Number::New(env, RawEnum(&ip.ip_type)));
  return out;
}

Napi::Object ChipInfoObject(Napi::Env env, const unsigned char* type, const unsigned char* name,
                            const unsigned char* ver, unsigned int aicore_cnt) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("chipType", FixedString(env, type, MAX_CHIP_NAME_LEN));
  out.Set("chipName", FixedString(env, name, MAX_CHIP_NAME_LEN));
  out.Set("chipVer", FixedString(env, ver, MAX_CHIP_NAME_LEN));
  out.Set("aicoreCnt", Napi::Number::New(env, aicore_cnt));
  return out;
}

Napi::Object BoardObject(Napi::Env env, const struct dcmi_board_info& board) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("boardId", Napi::Number::New(env, board.board_id));
  out.Set("pcbId", Napi::Number::New(env, board.pcb_id));
  out.Set("bomId", Napi::Number::New(env, board.bom_id));
  out.Set("slotId", Napi::Number::New(env, board.slot_id));
  return out;
}

Napi::Object ErrorCodesObject(Napi::Env env, int error_count, const unsigned int (&codes)[DCMI_MAX_ERROR_CODES]) {
  Napi::Array list = Napi::Array::New(env);
  uint32_t n = 0;
  for (unsigned int code : codes) {
    if (code != 0) list.Set(n++, Napi::Number::New(env, code));
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("errorCount", Napi::Number::New(env, error_count));
  out.Set("codes", list);
  return out;
}

Napi::Object IpPairObject(Napi::Env env, const struct dcmi_ip_addr& ip, const struct dcmi_ip_addr& mask) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("ip", IpObject(env, ip));
  out.Set("mask", IpObject(env, mask));
  return out;
}

Napi::Object ProcessesObject(Napi::Env env, const struct dcmi_proc_mem_info (&procs)[DCMI_MAX_PROC_NUM], int proc_num) {
  const int count = std::min(std::max(proc_num, 0), DCMI_MAX_PROC_NUM);
  Napi::Array processes = Napi::Array::New(env, count);
  for (int i = 0; i < count; ++i) {
    Napi::Object p = Napi::Object::New(env);
    p.Set("pid", Napi::Number::New(env, procs[i].proc_id));
    p.Set("memBytes", Napi::Number::New(env, static_cast<double>(procs[i].proc_mem_usage)));
    processes.Set(static_cast<uint32_t>(i), p);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("procNum", Napi::Number::New(env, proc_num));
  out.Set("processes", processes);
  return out;
}

Napi::Object PcieObject(Napi::Env env, const struct dcmi_pcie_info_all& pcie) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("venderId", Napi::Number::New(env, pcie.venderid));
  out.Set("subVenderId", Napi::Number::New(env, pcie.subvenderid));
  out.Set("deviceId", Napi::Number::New(env, pcie.deviceid));
  out.Set("subDeviceId", Napi::Number::New(env, pcie.subdeviceid));
  out.Set("domain", Napi::Number::New(env, pcie.domain));
  out.Set("busId", Napi::Number::New(env, pcie.bdf_busid));
  out.Set("devId", Napi::Number::New(env, pcie.bdf_deviceid));
  out.Set("funcId", Napi::Number::New(env, pcie.bdf_funcid));
  return out;
}

Napi::Object HbmObject(Napi::Env env, const struct dcmi_hbm_info& hbm) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("memorySize", Napi::Number::New(env, static_cast<double>(hbm.memory_size)));
  out.Set("freq", Napi::Number::New(env, hbm.freq));
  out.Set("memoryUsage", Napi::Number::New(env, static_cast<double>(hbm.memory_usage)));
  out.Set("temp", Napi::Number::New(env, hbm.temp));
  out.Set("bandwidthUtilRate", Napi::Number::New(env, hbm.bandwith_util_rate));
  return out;
}

Napi::Array DieArray(Napi::Env env, const struct dcmi_die_id& die) {
  Napi::Array out = Napi::Array::New(env, DIE_ID_COUNT);
  for (uint32_t i = 0; i < DIE_ID_COUNT; i++) out.Set(i, Napi::Number::New(env, die.soc_die[i]));
  return out;
}

// The buffer argument of the device-info multiplexer (§4.5): *size = its length on input.
struct InfoBuffer {
  void* data;
  unsigned int size;
  uint8_t empty = 0;
};

void InfoBufferArg(const Napi::CallbackInfo& info, size_t index, InfoBuffer* out) {
  Napi::Env env = info.Env();
  if (!info[index].IsBuffer()) ThrowTypeError(env, "buf", "a Buffer");
  Napi::Buffer<uint8_t> buf = info[index].As<Napi::Buffer<uint8_t>>();
  if (buf.Length() > 0xFFFFFFFFu) ThrowTypeError(env, "buf", "at most 4 GiB long");
  out->size = static_cast<unsigned int>(buf.Length());
  out->data = buf.Length() > 0 ? static_cast<void*>(buf.Data()) : static_cast<void*>(&out->empty);
}

// An optional integer property of an options object (absent/undefined → fallback).
double OptionalIntegerField(Napi::Object object, const char* key, const char* name, double min, double max,
                            const char* expected, double fallback) {
  Napi::Value value = object.Get(key);
  if (value.IsUndefined()) return fallback;
  return IntegerArg(object.Env(), value, name, min, max, expected);
}

// Runs one DCMI call on the libuv thread pool and settles a Promise: resolved with undefined or the numeric
// output when the call returns 0, rejected with the code otherwise.
class AsyncCall : public Napi::AsyncWorker {
 public:
  using Body = std::function<int(int64_t* out)>;

  AsyncCall(Napi::Env env, std::shared_ptr<LibHandle> lib, const char* fn, Body body, bool numeric)
      : Napi::AsyncWorker(env, fn),
        lib_(std::move(lib)),
        fn_(fn),
        body_(std::move(body)),
        numeric_(numeric),
        deferred_(Napi::Promise::Deferred::New(env)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override { rc_ = body_(&out_); }

  void OnOK() override {
    Napi::Env env = Env();
    if (rc_ != 0) {
      deferred_.Reject(MakeCallError(env, rc_, fn_).Value());
    } else {
      deferred_.Resolve(numeric_ ? Napi::Value(Napi::Number::New(env, static_cast<double>(out_))) : env.Undefined());
    }
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  std::shared_ptr<LibHandle> lib_;  // keeps the library mapped until the call has returned
  const char* fn_;
  Body body_;
  bool numeric_;
  Napi::Promise::Deferred deferred_;
  int rc_ = 0;
  int64_t out_ = 0;
};

class DcmiLibrary : public Napi::ObjectWrap<DcmiLibrary> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit DcmiLibrary(const Napi::CallbackInfo& info);
  ~DcmiLibrary() override;

 private:
  // The resolved symbol; throws -99999 when closed, -99998 when the library lacks it.
  template <typename F>
  F Symbol(Napi::Env env, F LibHandle::*field, const char* name) const;

  // Queues `call(fn, &out)` on the thread pool; a closed library or missing symbol rejects the Promise.
  template <typename F, typename Call>
  Napi::Value Async(Napi::Env env, F LibHandle::*field, const char* name, bool numeric, Call call);

  Napi::Value GetPath(const Napi::CallbackInfo& info);
  Napi::Value GetClosed(const Napi::CallbackInfo& info);
  Napi::Value MissingSymbols(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value Init(const Napi::CallbackInfo& info);
  Napi::Value GetCardList(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceNumInCard(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceLogicId(const Napi::CallbackInfo& info);
  Napi::Value GetPhyIdFromLogicId(const Napi::CallbackInfo& info);
  Napi::Value GetLogicIdFromPhyId(const Napi::CallbackInfo& info);
  Napi::Value GetCardIdDeviceIdFromLogicId(const Napi::CallbackInfo& info);
  Napi::Value GetChipInfoV2(const Napi::CallbackInfo& info);
  Napi::Value GetChipInfo(const Napi::CallbackInfo& info);
  Napi::Value GetBoardInfo(const Napi::CallbackInfo& info);
  Napi::Value GetMainboardId(const Napi::CallbackInfo& info);
  Napi::Value GetDcmiVersion(const Napi::CallbackInfo& info);
  Napi::Value GetProductType(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceHealth(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceErrorCodes(const Napi::CallbackInfo& info);
  Napi::Value SubscribeFaultEvents(const Napi::CallbackInfo& info);
  Napi::Value UnsubscribeFaultEvents(const Napi::CallbackInfo& info);
  Napi::Value FaultDeliveryStats(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceIp(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceType(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceInfo(const Napi::CallbackInfo& info);
  Napi::Value CreateVdevice(const Napi::CallbackInfo& info);
  Napi::Value DestroyVdevice(const Napi::CallbackInfo& info);
  Napi::Value GetNpuWorkMode(const Napi::CallbackInfo& info);
  Napi::Value SetDeviceReset(const Napi::CallbackInfo& info);
  Napi::Value GetOutbandChannelState(const Napi::CallbackInfo& info);
  Napi::Value PreResetSoc(const Napi::CallbackInfo& info);
  Napi::Value RescanSoc(const Napi::CallbackInfo& info);
  Napi::Value GetNetdevBrotherDevice(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceBootStatus(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceResourceInfo(const Napi::CallbackInfo& info);
  Napi::Value GetPcieInfoV2(const Napi::CallbackInfo& info);
  Napi::Value GetAffinityCpuInfo(const Napi::CallbackInfo& info);
  Napi::Value GetHbmInfo(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceDie(const Napi::CallbackInfo& info);
  Napi::Value GetUtilizationRate(const Napi::CallbackInfo& info);
  Napi::Value SetMultiDiePolicy(const Napi::CallbackInfo& info);
  Napi::Value GetDeviceNetworkHealth(const Napi::CallbackInfo& info);
  Napi::Value MockConfigure(const Napi::CallbackInfo& info);
  template <typename F, typename Call>
  Napi::Value Subscribe(const Napi::CallbackInfo& info, size_t first, F fn, const char* name, Call call);

  // The dcmiv2_* generation (dcmi_abi_v2.h): devId first, as the v1 method otherwise.
  Napi::Value MissingSymbolsV2(const Napi::CallbackInfo& info);
  Napi::Value V2Init(const Napi::CallbackInfo& info);
  Napi::Value V2GetDeviceList(const Napi::CallbackInfo& info);
  Napi::Value V2GetAllDeviceCount(const Napi::CallbackInfo& info);
  Napi::Value V2GetPhyIdFromDevId(const Napi::CallbackInfo& info);
  Napi::Value V2GetDevIdFromPhyId(const Napi::CallbackInfo& info);
  Napi::Value V2GetDeviceType(const Napi::CallbackInfo& info);
  Napi::Value V2GetChipInfo(const Napi::CallbackInfo& info);
  Napi::Value V2GetBoardInfo(const Napi::CallbackInfo& info);
  Napi::Value V2GetMainboardId(const Napi::CallbackInfo& info);
  Napi::Value V2GetDcmiVersion(const Napi::CallbackInfo& info);
  Napi::Value V2GetDeviceHealth(const Napi::CallbackInfo& info);
  Napi::Value V2GetDeviceErrorCodes(const Napi::CallbackInfo& info);
  Napi::Value V2GetDeviceIp(const Napi::CallbackInfo& info);
  Napi::Value V2GetDeviceInfo(const Napi::CallbackInfo& info);
  Napi::Value V2ResetDevice(const Napi::CallbackInfo& info);
  Napi::Value V2GetDeviceBootStatus(const Napi::CallbackInfo& info);
  Napi::Value V2GetOutbandChannelState(const Napi::CallbackInfo& info);
  Napi::Value V2PreResetDevice(const Napi::CallbackInfo& info);
  Napi::Value V2RescanDevice(const Napi::CallbackInfo& info);
  Napi::Value V2GetProcMemInfo(const Napi::CallbackInfo& info);
  Napi::Value V2GetDeviceDieId(const Napi::CallbackInfo& info);
  Napi::Value V2GetPcieInfo(const Napi::CallbackInfo& info);
  Napi::Value V2GetHbmInfo(const Napi::CallbackInfo& info);
  Napi::Value V2GetUtilizationRate(const Napi::CallbackInfo& info);
  Napi::Value V2GetDeviceNetworkHealth(const Napi::CallbackInfo& info);
  Napi::Value V2SubscribeFaultEvents(const Napi::CallbackInfo& info);
  Napi::Value V2GetElabelInfo(const Napi::CallbackInfo& info);
  Napi::Value V2GetUrmaDeviceCount(const Napi::CallbackInfo& info);
  Napi::Value V2GetUrmaEidList(const Napi::CallbackInfo& info);

  std::shared_ptr<LibHandle> lib_;  // null once closed
  std::string path_;
  std::vector<std::string> missing_;
  std::vector<std::string> missing_v2_;
};

#define DCMI_SYMBOL(name) Symbol(env, &LibHandle::name, #name)

template <typename F>
F DcmiLibrary::Symbol(Napi::Env env, F LibHandle::*field, const char* name) const {
  if (!lib_) throw ClosedError(env, name);
  F fn = lib_.get()->*field;
  if (fn == nullptr) {
    throw MakeDcmiError(env, DCMI_WRAP_SYMBOL_MISSING, name, std::string(name) + " is not exported by " + path_);
  }
  return fn;
}

template <typename F, typename Call>
Napi::Value DcmiLibrary::Async(Napi::Env env, F LibHandle::*field, const char* name, bool numeric, Call call) {
  F fn;
  try {
    fn = Symbol(env, field, name);
  } catch (const Napi::Error& error) {
    return Rejected(env, error);
  }
  auto* worker = new AsyncCall(env, lib_, name, [fn, call](int64_t* out) { return call(fn, out); }, numeric);
  Napi::Promise promise = worker->Promise();
  worker->Queue();  // the worker deletes itself after settling the Promise
  return promise;
}

DcmiLibrary::DcmiLibrary(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DcmiLibrary>(info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) ThrowTypeError(env, "libraryPath", "a string");
  path_ = info[0].As<Napi::String>().Utf8Value();
  if (path_.empty() || path_.find('\0') != std::string::npos) {
    // dlopen("") would return the main program; refuse instead of pretending it is libdcmi.so.
    throw MakeDcmiError(env, DCMI_WRAP_LOAD_FAILED, "dlopen", "dlopen failed: empty or invalid library path");
  }
  dlerror();
  void* dl = dlopen(path_.c_str(), RTLD_LAZY | RTLD_GLOBAL);  // dcmi-abi.md §1.3
  if (dl == nullptr) {
    const char* reason = dlerror();
    throw MakeDcmiError(env, DCMI_WRAP_LOAD_FAILED, "dlopen",
                        std::string("dlopen failed: ") + (reason ? reason : "unknown error"));
  }
  auto lib = std::make_shared<LibHandle>();
  lib->dl = dl;
  // Each symbol separately: a missing one disables that call only (-99998), not the library.
#define DCMI_RESOLVE(name, params)                                      \
  lib->name = reinterpret_cast<decltype(&::name)>(dlsym(dl, #name)); \
  if (lib->name == nullptr) missing_.push_back(#name);
  DCMI_BOUND_FUNCTIONS(DCMI_RESOLVE)
#undef DCMI_RESOLVE
#define DCMI_RESOLVE_V2(name, params)                                   \
  lib->name = reinterpret_cast<decltype(&::name)>(dlsym(dl, #name)); \
  if (lib->name == nullptr) missing_v2_.push_back(#name);
  DCMI_V2_FUNCTIONS(DCMI_RESOLVE_V2)
#undef DCMI_RESOLVE_V2
  lib->mock_dcmi_configure = reinterpret_cast<decltype(lib->mock_dcmi_configure)>(dlsym(dl, "mock_dcmi_configure"));
  lib_ = std::move(lib);
}

// Garbage collected without close(): the subscription (if this instance owns it) stops, and the library stays
// mapped. Unloading a vendor library whose threads may still run is unsafe at this point, and a leaked dlopen
// reference costs nothing; close() is the way to unload.
DcmiLibrary::~DcmiLibrary() {
  if (lib_) dcmi_fault::Unsubscribe(this);
}

Napi::Function DcmiLibrary::Define(Napi::Env env) {
  return DefineClass(
      env, "DcmiLibrary",
      {
          InstanceAccessor<&DcmiLibrary::GetPath>("path"),
          InstanceAccessor<&DcmiLibrary::GetClosed>("closed"),
          InstanceMethod<&DcmiLibrary::MissingSymbols>("missingSymbols"),
          InstanceMethod<&DcmiLibrary::Close>("close"),
          InstanceMethod<&DcmiLibrary::Init>("init"),
          InstanceMethod<&DcmiLibrary::GetCardList>("getCardList"),
          InstanceMethod<&DcmiLibrary::GetDeviceNumInCard>("getDeviceNumInCard"),
          InstanceMethod<&DcmiLibrary::GetDeviceLogicId>("getDeviceLogicId"),
          InstanceMethod<&DcmiLibrary::GetPhyIdFromLogicId>("getPhyIdFromLogicId"),
          InstanceMethod<&DcmiLibrary::GetLogicIdFromPhyId>("getLogicIdFromPhyId"),
          InstanceMethod<&DcmiLibrary::GetCardIdDeviceIdFromLogicId>("getCardIdDeviceIdFromLogicId"),
          InstanceMethod<&DcmiLibrary::GetChipInfoV2>("getChipInfoV2"),
          InstanceMethod<&DcmiLibrary::GetChipInfo>("getChipInfo"),
          InstanceMethod<&DcmiLibrary::GetBoardInfo>("getBoardInfo"),
          InstanceMethod<&DcmiLibrary::GetMainboardId>("getMainboardId"),
          InstanceMethod<&DcmiLibrary::GetDcmiVersion>("getDcmiVersion"),
          InstanceMethod<&DcmiLibrary::GetProductType>("getProductType"),
          InstanceMethod<&DcmiLibrary::GetDeviceHealth>("getDeviceHealth"),
          InstanceMethod<&DcmiLibrary::GetDeviceErrorCodes>("getDeviceErrorCodes"),
          InstanceMethod<&DcmiLibrary::SubscribeFaultEvents>("subscribeFaultEvents"),
          InstanceMethod<&DcmiLibrary::UnsubscribeFaultEvents>("unsubscribeFaultEvents"),
          InstanceMethod<&DcmiLibrary::FaultDeliveryStats>("faultDeliveryStats"),
          InstanceMethod<&DcmiLibrary::GetDeviceIp>("getDeviceIp"),
          InstanceMethod<&DcmiLibrary::GetDeviceType>("getDeviceType"),
          InstanceMethod<&DcmiLibrary::GetDeviceInfo>("getDeviceInfo"),
          InstanceMethod<&DcmiLibrary::CreateVdevice>("createVdevice"),
          InstanceMethod<&DcmiLibrary::DestroyVdevice>("destroyVdevice"),
          InstanceMethod<&DcmiLibrary::GetNpuWorkMode>("getNpuWorkMode"),
          InstanceMethod<&DcmiLibrary::SetDeviceReset>("setDeviceReset"),
          InstanceMethod<&DcmiLibrary::GetOutbandChannelState>("getOutbandChannelState"),
          InstanceMethod<&DcmiLibrary::PreResetSoc>("preResetSoc"),
          InstanceMethod<&DcmiLibrary::RescanSoc>("rescanSoc"),
          InstanceMethod<&DcmiLibrary::GetNetdevBrotherDevice>("getNetdevBrotherDevice"),
          InstanceMethod<&DcmiLibrary::GetDeviceBootStatus>("getDeviceBootStatus"),
          InstanceMethod<&DcmiLibrary::GetDeviceResourceInfo>("getDeviceResourceInfo"),
          InstanceMethod<&DcmiLibrary::GetPcieInfoV2>("getPcieInfoV2"),
          InstanceMethod<&DcmiLibrary::GetAffinityCpuInfo>("getAffinityCpuInfo"),
          InstanceMethod<&DcmiLibrary::GetHbmInfo>("getHbmInfo"),
          InstanceMethod<&DcmiLibrary::GetDeviceDie>("getDeviceDie"),
          InstanceMethod<&DcmiLibrary::GetUtilizationRate>("getUtilizationRate"),
          InstanceMethod<&DcmiLibrary::SetMultiDiePolicy>("setMultiDiePolicy"),
          InstanceMethod<&DcmiLibrary::GetDeviceNetworkHealth>("getDeviceNetworkHealth"),
          InstanceMethod<&DcmiLibrary::MockConfigure>("mockConfigure"),
          InstanceMethod<&DcmiLibrary::MissingSymbolsV2>("missingSymbolsV2"),
          InstanceMethod<&DcmiLibrary::V2Init>("v2Init"),
          InstanceMethod<&DcmiLibrary::V2GetDeviceList>("v2GetDeviceList"),
          InstanceMethod<&DcmiLibrary::V2GetAllDeviceCount>("v2GetAllDeviceCount"),
          InstanceMethod<&DcmiLibrary::V2GetPhyIdFromDevId>("v2GetPhyIdFromDevId"),
          InstanceMethod<&DcmiLibrary::V2GetDevIdFromPhyId>("v2GetDevIdFromPhyId"),
          InstanceMethod<&DcmiLibrary::V2GetDeviceType>("v2GetDeviceType"),
          InstanceMethod<&DcmiLibrary::V2GetChipInfo>("v2GetChipInfo"),
          InstanceMethod<&DcmiLibrary::V2GetBoardInfo>("v2GetBoardInfo"),
          InstanceMethod<&DcmiLibrary::V2GetMainboardId>("v2GetMainboardId"),
          InstanceMethod<&DcmiLibrary::V2GetDcmiVersion>("v2GetDcmiVersion"),
          InstanceMethod<&DcmiLibrary::V2GetDeviceHealth>("v2GetDeviceHealth"),
          InstanceMethod<&DcmiLibrary::V2GetDeviceErrorCodes>("v2GetDeviceErrorCodes"),
          InstanceMethod<&DcmiLibrary::V2GetDeviceIp>("v2GetDeviceIp"),
          InstanceMethod<&DcmiLibrary::V2GetDeviceInfo>("v2GetDeviceInfo"),
          InstanceMethod<&DcmiLibrary::V2ResetDevice>("v2ResetDevice"),
          InstanceMethod<&DcmiLibrary::V2GetDeviceBootStatus>("v2GetDeviceBootStatus"),
          InstanceMethod<&DcmiLibrary::V2GetOutbandChannelState>("v2GetOutbandChannelState"),
          InstanceMethod<&DcmiLibrary::V2PreResetDevice>("v2PreResetDevice"),
          InstanceMethod<&DcmiLibrary::V2RescanDevice>("v2RescanDevice"),
          InstanceMethod<&DcmiLibrary::V2GetProcMemInfo>("v2GetProcMemInfo"),
          InstanceMethod<&DcmiLibrary::V2GetDeviceDieId>("v2GetDeviceDieId"),
          InstanceMethod<&DcmiLibrary::V2GetPcieInfo>("v2GetPcieInfo"),
          InstanceMethod<&DcmiLibrary::V2GetHbmInfo>("v2GetHbmInfo"),
          InstanceMethod<&DcmiLibrary::V2GetUtilizationRate>("v2GetUtilizationRate"),
          InstanceMethod<&DcmiLibrary::V2GetDeviceNetworkHealth>("v2GetDeviceNetworkHealth"),
          InstanceMethod<&DcmiLibrary::V2SubscribeFaultEvents>("v2SubscribeFaultEvents"),
          InstanceMethod<&DcmiLibrary::V2GetElabelInfo>("v2GetElabelInfo"),
          InstanceMethod<&DcmiLibrary::V2GetUrmaDeviceCount>("v2GetUrmaDeviceCount"),
          InstanceMethod<&DcmiLibrary::V2GetUrmaEidList>("v2GetUrmaEidList"),
      });
}

Napi::Value DcmiLibrary::GetPath(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), path_); }

Napi::Value DcmiLibrary::GetClosed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !lib_); }

Napi::Value DcmiLibrary::MissingSymbols(const Napi::CallbackInfo& info) {
  Napi::Array out = Napi::Array::New(info.Env(), missing_.size());
  for (size_t i = 0; i < missing_.size(); ++i) out.Set(static_cast<uint32_t>(i), missing_[i]);
  return out;
}

Napi::Value DcmiLibrary::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!lib_) return env.Undefined();
  dcmi_fault::Unsubscribe(this);
  std::shared_ptr<LibHandle> lib = std::move(lib_);
  if (lib.use_count() > 1) {  // asynchronous calls are running: the last one to finish unloads
    lib->dlclose_when_released = true;
    return env.Undefined();
  }
  void* dl = lib->dl;
  lib->dl = nullptr;
  dlerror();
  if (dlclose(dl) != 0) {
    const char* reason = dlerror();
    throw MakeDcmiError(env, DCMI_WRAP_DLCLOSE_FAILED, "dlclose",
                        std::string("dlclose failed: ") + (reason ? reason : "unknown error"));
  }
  return env.Undefined();
}

Napi::Value DcmiLibrary::Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Async(env, &LibHandle::dcmi_init, "dcmi_init", false,
               [](decltype(&::dcmi_init) fn, int64_t*) { return fn(); });
}

Napi::Value DcmiLibrary::GetCardList(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto fn = DCMI_SYMBOL(dcmi_get_card_list);
  int card_num = 0;
  int list[DCMI_CARD_LIST_LEN] = {0};
  Check(env, fn(&card_num, list, DCMI_CARD_LIST_LEN), "dcmi_get_card_list");
  const int count = std::min(std::max(card_num, 0), DCMI_CARD_LIST_LEN);
  Napi::Array cards = Napi::Array::New(env, count);
  for (int i = 0; i < count; ++i) cards.Set(static_cast<uint32_t>(i), Napi::Number::New(env, list[i]));
  Napi::Object out = Napi::Object::New(env);
  out.Set("cardNum", Napi::Number::New(env, card_num));
  out.Set("cards", cards);
  return out;
}

Napi::Value DcmiLibrary::GetDeviceNumInCard(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_num_in_card);
  int num = 0;
  Check(env, fn(card, &num), "dcmi_get_device_num_in_card");
  return Napi::Number::New(env, num);
}

Napi::Value DcmiLibrary::GetDeviceLogicId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_logic_id);
  int logic_id = 0;
  Check(env, fn(&logic_id, card, device), "dcmi_get_device_logic_id");
  return Napi::Number::New(env, logic_id);
}

Napi::Value DcmiLibrary::GetPhyIdFromLogicId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const unsigned int logic_id = Uint32Arg(info, 0, "logicId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_phyid_from_logicid);
  unsigned int phy_id = 0;
  Check(env, fn(logic_id, &phy_id), "dcmi_get_device_phyid_from_logicid");
  return Napi::Number::New(env, phy_id);
}

Napi::Value DcmiLibrary::GetLogicIdFromPhyId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const unsigned int phy_id = Uint32Arg(info, 0, "phyId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_logicid_from_phyid);
  unsigned int logic_id = 0;
  Check(env, fn(phy_id, &logic_id), "dcmi_get_device_logicid_from_phyid");
  return Napi::Number::New(env, logic_id);
}

Napi::Value DcmiLibrary::GetCardIdDeviceIdFromLogicId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const unsigned int logic_id = Uint32Arg(info, 0, "logicId");
  auto fn = DCMI_SYMBOL(dcmi_get_card_id_device_id_from_logicid);
  int card = 0;
  int device = 0;
  Check(env, fn(&card, &device, logic_id), "dcmi_get_card_id_device_id_from_logicid");
  Napi::Object out = Napi::Object::New(env);
  out.Set("cardId", Napi::Number::New(env, card));
  out.Set("deviceId", Napi::Number::New(env, device));
  return out;
}

Napi::Value DcmiLibrary::GetChipInfoV2(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_chip_info_v2);
  struct dcmi_chip_info_v2 chip;
  std::memset(&chip, 0, sizeof chip);
  Check(env, fn(card, device, &chip), "dcmi_get_device_chip_info_v2");
  Napi::Object out = ChipInfoObject(env, chip.chip_type, chip.chip_name, chip.chip_ver, chip.aicore_cnt);
  out.Set("npuName", FixedString(env, chip.npu_name, sizeof chip.npu_name));
  return out;
}

Napi::Value DcmiLibrary::GetChipInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_chip_info);
  struct dcmi_chip_info chip;
  std::memset(&chip, 0, sizeof chip);
  Check(env, fn(card, device, &chip), "dcmi_get_device_chip_info");
  return ChipInfoObject(env, chip.chip_type, chip.chip_name, chip.chip_ver, chip.aicore_cnt);
}

Napi::Value DcmiLibrary::GetBoardInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_board_info);
  struct dcmi_board_info board;
  std::memset(&board, 0, sizeof board);
  Check(env, fn(card, device, &board), "dcmi_get_device_board_info");
  return BoardObject(env, board);
}

Napi::Value DcmiLibrary::GetMainboardId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_mainboard_id);
  unsigned int id = 0;
  Check(env, fn(card, device, &id), "dcmi_get_mainboard_id");
  return Napi::Number::New(env, id);
}

Napi::Value DcmiLibrary::GetDcmiVersion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto fn = DCMI_SYMBOL(dcmi_get_dcmi_version);
  char version[DCMI_VERSION_BUF] = {0};  // §4.2: 33 bytes, buf_size 33
  Check(env, fn(version, DCMI_VERSION_BUF), "dcmi_get_dcmi_version");
  return FixedString(env, version, sizeof version);
}

Napi::Value DcmiLibrary::GetProductType(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_product_type);
  char product[DCMI_PRODUCT_TYPE_BUF] = {0};  // §4.2: 65 bytes, buf_size 65
  Check(env, fn(card, device, product, DCMI_PRODUCT_TYPE_BUF), "dcmi_get_product_type");
  return FixedString(env, product, sizeof product);
}

Napi::Value DcmiLibrary::GetDeviceHealth(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_health);
  unsigned int health = 0;
  Check(env, fn(card, device, &health), "dcmi_get_device_health");
  return Napi::Number::New(env, health);
}

Napi::Value DcmiLibrary::GetDeviceErrorCodes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_errorcode_v2);
  int error_count = 0;
  unsigned int codes[DCMI_MAX_ERROR_CODES] = {0};  // §4.3: zeroed, list_len 128
  Check(env, fn(card, device, &error_count, codes, DCMI_MAX_ERROR_CODES), "dcmi_get_device_errorcode_v2");
  return ErrorCodesObject(env, error_count, codes);
}

Napi::Value DcmiLibrary::SubscribeFaultEvents(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  return Subscribe(info, 2, DCMI_SYMBOL(dcmi_subscribe_fault_event), "dcmi_subscribe_fault_event",
                   [card, device](decltype(&::dcmi_subscribe_fault_event) fn, const struct dcmi_event_filter& filter) {
                     return fn(card, device, filter, &dcmi_fault::Trampoline);  // §5.1: by value, 4th arg handler
                   });
}

// The listener, filter and options arguments start at `first`; `call(fn, filter)` calls the library.
template <typename F, typename Call>
Napi::Value DcmiLibrary::Subscribe(const Napi::CallbackInfo& info, size_t first, F fn, const char* name, Call call) {
  Napi::Env env = info.Env();
  if (!info[first].IsFunction()) ThrowTypeError(env, "listener", "a function");
  struct dcmi_event_filter filter;  // §5.2: all-zero = no filtering
  std::memset(&filter, 0, sizeof filter);
  const Napi::Value filter_arg = info[first + 1];
  if (!filter_arg.IsUndefined() && !filter_arg.IsNull()) {
    if (!filter_arg.IsObject()) ThrowTypeError(env, "filter", "an object");
    Napi::Object f = filter_arg.As<Napi::Object>();
    filter.filter_flag = static_cast<unsigned long long>(OptionalIntegerField(
        f, "filterFlag", "filter.filterFlag", 0, kMaxSafeInteger, "a non-negative safe integer", 0));
    filter.event_id = static_cast<unsigned int>(
        OptionalIntegerField(f, "eventId", "filter.eventId", 0, 4294967295.0, "an integer in the uint32 range", 0));
    filter.severity = static_cast<unsigned char>(
        OptionalIntegerField(f, "severity", "filter.severity", 0, 255, "an integer in the uint8 range", 0));
    filter.node_type = static_cast<unsigned char>(
        OptionalIntegerField(f, "nodeType", "filter.nodeType", 0, 255, "an integer in the uint8 range", 0));
  }
  uint32_t max_queue = kDefaultMaxQueue;
  const Napi::Value options_arg = info[first + 2];
  if (!options_arg.IsUndefined() && !options_arg.IsNull()) {
    if (!options_arg.IsObject()) ThrowTypeError(env, "options", "an object");
    max_queue = static_cast<uint32_t>(OptionalIntegerField(options_arg.As<Napi::Object>(), "maxQueue",
                                                           "options.maxQueue", 0, 4294967295.0,
                                                           "an integer in the uint32 range", kDefaultMaxQueue));
  }
  dcmi_fault::Channel* channel = dcmi_fault::CreateChannel(env, info[first].As<Napi::Function>(), max_queue);
  // The new channel is current before the library is called, so an event fired during or right after the call
  // reaches it; the previous listener keeps its queued events (moved over on success, kept on failure).
  const dcmi_fault::Previous previous = dcmi_fault::Install(channel, this);
  const int rc = call(fn, filter);
  if (rc != 0) {
    dcmi_fault::Rollback(previous, channel);
    throw MakeCallError(env, rc, name);
  }
  dcmi_fault::Commit(previous, channel);
  return env.Undefined();
}

Napi::Value DcmiLibrary::UnsubscribeFaultEvents(const Napi::CallbackInfo& info) {
  // DCMI has no unsubscribe: the library keeps calling the trampoline, which then finds no channel.
  dcmi_fault::Unsubscribe(this);
  return info.Env().Undefined();
}

Napi::Value DcmiLibrary::FaultDeliveryStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const dcmi_fault::Stats stats = dcmi_fault::GetStats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("delivered", Napi::Number::New(env, static_cast<double>(stats.delivered)));
  out.Set("dropped", Napi::Number::New(env, static_cast<double>(stats.dropped)));
  out.Set("inFlight", Napi::Number::New(env, static_cast<double>(stats.in_flight)));
  return out;
}

Napi::Value DcmiLibrary::GetDeviceIp(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  const int port_type = Int32Arg(info, 2, "portType");
  const int port_id = Int32Arg(info, 3, "portId");
  const bool ipv6 = BoolArg(info, 4, "ipv6");
  auto fn = DCMI_SYMBOL(dcmi_get_device_ip);
  struct dcmi_ip_addr ip;
  struct dcmi_ip_addr mask;
  std::memset(&ip, 0, sizeof ip);
  std::memset(&mask, 0, sizeof mask);
  if (ipv6) ip.ip_type = DCMI_IPADDR_TYPE_V6;  // §4.4: pre-set on input for an IPv6 request
  Check(env, fn(card, device, static_cast<enum dcmi_port_type>(port_type), port_id, &ip, &mask), "dcmi_get_device_ip");
  return IpPairObject(env, ip, mask);
}

Napi::Value DcmiLibrary::GetDeviceType(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_type);
  unsigned int type = 0;
  Check(env, fn(card, device, reinterpret_cast<enum dcmi_unit_type*>(&type)), "dcmi_get_device_type");
  return Napi::Number::New(env, type);
}

Napi::Value DcmiLibrary::GetDeviceInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  const int main_cmd = Int32Arg(info, 2, "mainCmd");
  const unsigned int sub_cmd = Uint32Arg(info, 3, "subCmd");
  InfoBuffer buf;  // §4.5: *size = sizeof buffer on input
  InfoBufferArg(info, 4, &buf);
  auto fn = DCMI_SYMBOL(dcmi_get_device_info);
  // main_cmd 12 is not an enumerator (§4.5); it is passed by numeric cast like upstream does.
  Check(env, fn(card, device, static_cast<enum dcmi_main_cmd>(main_cmd), sub_cmd, buf.data, &buf.size),
        "dcmi_get_device_info");
  return Napi::Number::New(env, buf.size);
}

// §4.6: vdev_id and vfg_id 0xFFFFFFFF unless given, the template name NUL padded to 32 bytes, reserved zero.
Napi::Value DcmiLibrary::CreateVdevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  if (!info[2].IsString()) ThrowTypeError(env, "templateName", "a string");
  const std::string name = info[2].As<Napi::String>().Utf8Value();
  struct dcmi_create_vdev_res_stru in;
  std::memset(&in, 0, sizeof in);
  if (name.empty() || name.size() >= sizeof in.template_name || name.find('\0') != std::string::npos) {
    ThrowTypeError(env, "templateName", "1 to 31 bytes without NUL");
  }
  in.vdev_id = info.Length() > 3 && !info[3].IsUndefined() ? Uint32Arg(info, 3, "vdevId") : 0xFFFFFFFFu;
  in.vfg_id = info.Length() > 4 && !info[4].IsUndefined() ? Uint32Arg(info, 4, "vfgId") : 0xFFFFFFFFu;
  std::memcpy(in.template_name, name.data(), name.size());
  auto fn = DCMI_SYMBOL(dcmi_create_vdevice);
  struct dcmi_create_vdev_out out;
  std::memset(&out, 0, sizeof out);
  Check(env, fn(card, device, &in, &out), "dcmi_create_vdevice");
  Napi::Object res = Napi::Object::New(env);
  res.Set("vdevId", Napi::Number::New(env, out.vdev_id));
  res.Set("pcieBus", Napi::Number::New(env, out.pcie_bus));
  res.Set("pcieDevice", Napi::Number::New(env, out.pcie_device));
  res.Set("pcieFunc", Napi::Number::New(env, out.pcie_func));
  res.Set("vfgId", Napi::Number::New(env, out.vfg_id));
  return res;
}

Napi::Value DcmiLibrary::DestroyVdevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  const unsigned int vdev = Uint32Arg(info, 2, "vdevId");
  auto fn = DCMI_SYMBOL(dcmi_set_destroy_vdevice);
  Check(env, fn(card, device, vdev), "dcmi_set_destroy_vdevice");
  return env.Undefined();
}

Napi::Value DcmiLibrary::GetNpuWorkMode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  auto fn = DCMI_SYMBOL(dcmi_get_npu_work_mode);
  unsigned char mode = 0;
  Check(env, fn(card, &mode), "dcmi_get_npu_work_mode");
  return Napi::Number::New(env, mode);
}

Napi::Value DcmiLibrary::SetDeviceReset(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  const int channel = Int32Arg(info, 2, "channel");
  return Async(env, &LibHandle::dcmi_set_device_reset, "dcmi_set_device_reset", false,
               [card, device, channel](decltype(&::dcmi_set_device_reset) fn, int64_t*) {
                 return fn(card, device, static_cast<enum dcmi_reset_channel>(channel));
               });
}

Napi::Value DcmiLibrary::GetOutbandChannelState(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  return Async(env, &LibHandle::dcmi_get_device_outband_channel_state, "dcmi_get_device_outband_channel_state", true,
               [card, device](decltype(&::dcmi_get_device_outband_channel_state) fn, int64_t* out) {
                 int state = 0;
                 const int rc = fn(card, device, &state);
                 *out = state;
                 return rc;
               });
}

Napi::Value DcmiLibrary::PreResetSoc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  return Async(env, &LibHandle::dcmi_pre_reset_soc, "dcmi_pre_reset_soc", false,
               [card, device](decltype(&::dcmi_pre_reset_soc) fn, int64_t*) { return fn(card, device); });
}

Napi::Value DcmiLibrary::RescanSoc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  return Async(env, &LibHandle::dcmi_rescan_soc, "dcmi_rescan_soc", false,
               [card, device](decltype(&::dcmi_rescan_soc) fn, int64_t*) { return fn(card, device); });
}

Napi::Value DcmiLibrary::GetNetdevBrotherDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_netdev_brother_device);
  int brother = 0;
  Check(env, fn(card, device, &brother), "dcmi_get_netdev_brother_device");
  return Napi::Number::New(env, brother);
}

Napi::Value DcmiLibrary::GetDeviceBootStatus(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  return Async(env, &LibHandle::dcmi_get_device_boot_status, "dcmi_get_device_boot_status", true,
               [card, device](decltype(&::dcmi_get_device_boot_status) fn, int64_t* out) {
                 unsigned int status = DCMI_BOOT_STATUS_FINISH;  // §4.7: pre-set to 3 as upstream does
                 const int rc = fn(card, device, reinterpret_cast<enum dcmi_boot_status*>(&status));
                 *out = status;
                 return rc;
               });
}

Napi::Value DcmiLibrary::GetDeviceResourceInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_resource_info);
  struct dcmi_proc_mem_info procs[DCMI_MAX_PROC_NUM];  // §4.8: 32 entries
  std::memset(procs, 0, sizeof procs);
  int proc_num = 0;
  Check(env, fn(card, device, procs, &proc_num), "dcmi_get_device_resource_info");
  return ProcessesObject(env, procs, proc_num);
}

Napi::Value DcmiLibrary::GetPcieInfoV2(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_pcie_info_v2);
  struct dcmi_pcie_info_all pcie;
  std::memset(&pcie, 0, sizeof pcie);
  Check(env, fn(card, device, &pcie), "dcmi_get_device_pcie_info_v2");
  return PcieObject(env, pcie);
}

Napi::Value DcmiLibrary::GetAffinityCpuInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_affinity_cpu_info_by_device_id);
  char cpus[DCMI_AFFINITY_BUF] = {0};  // §4.8: 33 bytes, no size passed
  int length = 0;
  Check(env, fn(card, device, cpus, &length), "dcmi_get_affinity_cpu_info_by_device_id");
  const int take = std::min(std::max(length, 0), DCMI_AFFINITY_BUF - 1);
  Napi::Object out = Napi::Object::New(env);
  out.Set("length", Napi::Number::New(env, length));
  out.Set("text", Napi::String::New(env, cpus, static_cast<size_t>(take)));
  return out;
}

Napi::Value DcmiLibrary::GetHbmInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  auto fn = DCMI_SYMBOL(dcmi_get_device_hbm_info);
  struct dcmi_hbm_info hbm;
  std::memset(&hbm, 0, sizeof hbm);
  Check(env, fn(card, device, &hbm), "dcmi_get_device_hbm_info");
  return HbmObject(env, hbm);
}

// §4.8 die ID (soft share, spec L.7): the five words of soc_die, as unsigned numbers
Napi::Value DcmiLibrary::GetDeviceDie(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  const int type = Int32Arg(info, 2, "dieType");
  auto fn = DCMI_SYMBOL(dcmi_get_device_die_v2);
  struct dcmi_die_id die;
  std::memset(&die, 0, sizeof die);
  Check(env, fn(card, device, static_cast<enum dcmi_die_type>(type), &die), "dcmi_get_device_die_v2");
  return DieArray(env, die);
}

Napi::Value DcmiLibrary::GetUtilizationRate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  const int input_type = Int32Arg(info, 2, "inputType");
  auto fn = DCMI_SYMBOL(dcmi_get_device_utilization_rate);
  unsigned int rate = 0;
  Check(env, fn(card, device, input_type, &rate), "dcmi_get_device_utilization_rate");
  return Napi::Number::New(env, rate);
}

Napi::Value DcmiLibrary::SetMultiDiePolicy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int policy = Int32Arg(info, 0, "policy");
  auto fn = DCMI_SYMBOL(dcmi_set_multi_die_policy);
  Check(env, fn(static_cast<enum dcmi_multi_die_policy>(policy)), "dcmi_set_multi_die_policy");
  return env.Undefined();
}

Napi::Value DcmiLibrary::GetDeviceNetworkHealth(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int card = Int32Arg(info, 0, "cardId");
  const int device = Int32Arg(info, 1, "deviceId");
  return Async(env, &LibHandle::dcmi_get_device_network_health, "dcmi_get_device_network_health", true,
               [card, device](decltype(&::dcmi_get_device_network_health) fn, int64_t* out) {
                 unsigned int result = 0;
                 const int rc = fn(card, device, reinterpret_cast<enum dcmi_rdfx_detect_result*>(&result));
                 *out = result;
                 return rc;
               });
}

Napi::Value DcmiLibrary::MockConfigure(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string scenario;
  std::string control;
  const bool has_scenario = OptionalStringArg(info, 0, "scenarioPath", &scenario);
  const bool has_control = OptionalStringArg(info, 1, "controlPath", &control);
  auto fn = DCMI_SYMBOL(mock_dcmi_configure);
  Check(env, fn(has_scenario ? scenario.c_str() : nullptr, has_control ? control.c_str() : nullptr),
        "mock_dcmi_configure");
  return env.Undefined();
}

// ------------------------------------------------------------------------------------------ dcmiv2_* (A5)

Napi::Value DcmiLibrary::MissingSymbolsV2(const Napi::CallbackInfo& info) {
  Napi::Array out = Napi::Array::New(info.Env(), missing_v2_.size());
  for (size_t i = 0; i < missing_v2_.size(); ++i) out.Set(static_cast<uint32_t>(i), missing_v2_[i]);
  return out;
}

Napi::Value DcmiLibrary::V2Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Async(env, &LibHandle::dcmiv2_init, "dcmiv2_init", false,
               [](decltype(&::dcmiv2_init) fn, int64_t*) { return fn(); });
}

Napi::Value DcmiLibrary::V2GetDeviceList(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_list);
  int device_num = 0;
  int list[DCMI_CARD_LIST_LEN] = {0};  // upstream: an int[64] (HiAIMaxCardNum) list
  Check(env, fn(list, &device_num, DCMI_CARD_LIST_LEN), "dcmiv2_get_device_list");
  const int count = std::min(std::max(device_num, 0), DCMI_CARD_LIST_LEN);
  Napi::Array devices = Napi::Array::New(env, count);
  for (int i = 0; i < count; ++i) devices.Set(static_cast<uint32_t>(i), Napi::Number::New(env, list[i]));
  Napi::Object out = Napi::Object::New(env);
  out.Set("deviceNum", Napi::Number::New(env, device_num));
  out.Set("devices", devices);
  return out;
}

Napi::Value DcmiLibrary::V2GetAllDeviceCount(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto fn = DCMI_SYMBOL(dcmiv2_get_all_device_count);
  int count = 0;
  Check(env, fn(&count), "dcmiv2_get_all_device_count");
  return Napi::Number::New(env, count);
}

Napi::Value DcmiLibrary::V2GetPhyIdFromDevId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const unsigned int dev = Uint32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_chip_phy_id_by_dev_id);
  unsigned int phy_id = 0;
  Check(env, fn(dev, &phy_id), "dcmiv2_get_chip_phy_id_by_dev_id");
  return Napi::Number::New(env, phy_id);
}

Napi::Value DcmiLibrary::V2GetDevIdFromPhyId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const unsigned int phy_id = Uint32Arg(info, 0, "phyId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_dev_id_by_chip_phy_id);
  unsigned int dev = 0;
  Check(env, fn(phy_id, &dev), "dcmiv2_get_dev_id_by_chip_phy_id");
  return Napi::Number::New(env, dev);
}

Napi::Value DcmiLibrary::V2GetDeviceType(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_type);
  unsigned int type = 0;
  Check(env, fn(dev, reinterpret_cast<enum dcmi_unit_type*>(&type)), "dcmiv2_get_device_type");
  return Napi::Number::New(env, type);
}

Napi::Value DcmiLibrary::V2GetChipInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_chip_info);
  struct dcmi_chip_info_v2 chip;
  std::memset(&chip, 0, sizeof chip);
  Check(env, fn(dev, &chip), "dcmiv2_get_device_chip_info");
  Napi::Object out = ChipInfoObject(env, chip.chip_type, chip.chip_name, chip.chip_ver, chip.aicore_cnt);
  out.Set("npuName", FixedString(env, chip.npu_name, sizeof chip.npu_name));
  return out;
}

Napi::Value DcmiLibrary::V2GetBoardInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_board_info);
  struct dcmi_board_info board;
  std::memset(&board, 0, sizeof board);
  Check(env, fn(dev, &board), "dcmiv2_get_device_board_info");
  return BoardObject(env, board);
}

Napi::Value DcmiLibrary::V2GetMainboardId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_mainboard_id);
  unsigned int id = 0;
  Check(env, fn(dev, &id), "dcmiv2_get_mainboard_id");
  return Napi::Number::New(env, id);
}

Napi::Value DcmiLibrary::V2GetDcmiVersion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto fn = DCMI_SYMBOL(dcmiv2_get_dcmi_version);
  char version[DCMI_VERSION_BUF] = {0};  // as v1: 33 bytes, buf_size 33
  Check(env, fn(version, DCMI_VERSION_BUF), "dcmiv2_get_dcmi_version");
  return FixedString(env, version, sizeof version);
}

Napi::Value DcmiLibrary::V2GetDeviceHealth(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_health);
  unsigned int health = 0;
  Check(env, fn(dev, &health), "dcmiv2_get_device_health");
  return Napi::Number::New(env, health);
}

Napi::Value DcmiLibrary::V2GetDeviceErrorCodes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_error_code_list);
  int error_count = 0;
  unsigned int codes[DCMI_MAX_ERROR_CODES] = {0};  // as v1 §4.3: zeroed, list_len 128
  Check(env, fn(dev, &error_count, codes, DCMI_MAX_ERROR_CODES), "dcmiv2_get_device_error_code_list");
  return ErrorCodesObject(env, error_count, codes);
}

Napi::Value DcmiLibrary::V2GetDeviceIp(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  const int port_type = Int32Arg(info, 1, "portType");
  const int port_id = Int32Arg(info, 2, "portId");
  const bool ipv6 = BoolArg(info, 3, "ipv6");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_ip);
  struct dcmi_ip_addr ip;
  struct dcmi_ip_addr mask;
  std::memset(&ip, 0, sizeof ip);
  std::memset(&mask, 0, sizeof mask);
  if (ipv6) ip.ip_type = DCMI_IPADDR_TYPE_V6;  // as v1 §4.4
  Check(env, fn(dev, static_cast<enum dcmi_port_type>(port_type), port_id, &ip, &mask), "dcmiv2_get_device_ip");
  return IpPairObject(env, ip, mask);
}

Napi::Value DcmiLibrary::V2GetDeviceInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  const int main_cmd = Int32Arg(info, 1, "mainCmd");
  const unsigned int sub_cmd = Uint32Arg(info, 2, "subCmd");
  InfoBuffer buf;
  InfoBufferArg(info, 3, &buf);
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_info);
  Check(env, fn(dev, static_cast<enum dcmi_main_cmd>(main_cmd), sub_cmd, buf.data, &buf.size),
        "dcmiv2_get_device_info");
  return Napi::Number::New(env, buf.size);
}

Napi::Value DcmiLibrary::V2ResetDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  const int channel = Int32Arg(info, 1, "channel");
  return Async(env, &LibHandle::dcmiv2_reset_device, "dcmiv2_reset_device", false,
               [dev, channel](decltype(&::dcmiv2_reset_device) fn, int64_t*) {
                 return fn(dev, static_cast<enum dcmi_reset_channel>(channel));
               });
}

Napi::Value DcmiLibrary::V2GetDeviceBootStatus(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  return Async(env, &LibHandle::dcmiv2_get_device_boot_status, "dcmiv2_get_device_boot_status", true,
               [dev](decltype(&::dcmiv2_get_device_boot_status) fn, int64_t* out) {
                 unsigned int status = DCMI_BOOT_STATUS_FINISH;  // pre-set to 3, as upstream's v2 wrapper does
                 const int rc = fn(dev, reinterpret_cast<enum dcmi_boot_status*>(&status));
                 *out = status;
                 return rc;
               });
}

Napi::Value DcmiLibrary::V2GetOutbandChannelState(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  return Async(env, &LibHandle::dcmiv2_get_device_outband_channel_state, "dcmiv2_get_device_outband_channel_state",
               true, [dev](decltype(&::dcmiv2_get_device_outband_channel_state) fn, int64_t* out) {
                 int state = 0;
                 const int rc = fn(dev, &state);
                 *out = state;
                 return rc;
               });
}

Napi::Value DcmiLibrary::V2PreResetDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  return Async(env, &LibHandle::dcmiv2_pre_reset_device, "dcmiv2_pre_reset_device", false,
               [dev](decltype(&::dcmiv2_pre_reset_device) fn, int64_t*) { return fn(dev); });
}

Napi::Value DcmiLibrary::V2RescanDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  return Async(env, &LibHandle::dcmiv2_rescan_device, "dcmiv2_rescan_device", false,
               [dev](decltype(&::dcmiv2_rescan_device) fn, int64_t*) { return fn(dev); });
}

Napi::Value DcmiLibrary::V2GetProcMemInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_proc_mem_info);
  struct dcmi_proc_mem_info procs[DCMI_MAX_PROC_NUM];  // as v1 §4.8: 32 entries
  std::memset(procs, 0, sizeof procs);
  int proc_num = 0;
  Check(env, fn(dev, procs, &proc_num), "dcmiv2_get_device_proc_mem_info");
  return ProcessesObject(env, procs, proc_num);
}

Napi::Value DcmiLibrary::V2GetDeviceDieId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  const int type = Int32Arg(info, 1, "dieType");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_die_id);
  struct dcmi_die_id die;
  std::memset(&die, 0, sizeof die);
  Check(env, fn(dev, static_cast<enum dcmi_die_type>(type), &die), "dcmiv2_get_device_die_id");
  return DieArray(env, die);
}

Napi::Value DcmiLibrary::V2GetPcieInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_pcie_info);
  struct dcmi_pcie_info_all pcie;
  std::memset(&pcie, 0, sizeof pcie);
  Check(env, fn(dev, &pcie), "dcmiv2_get_device_pcie_info");
  return PcieObject(env, pcie);
}

Napi::Value DcmiLibrary::V2GetHbmInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_hbm_info);
  struct dcmi_hbm_info hbm;
  std::memset(&hbm, 0, sizeof hbm);
  Check(env, fn(dev, &hbm), "dcmiv2_get_device_hbm_info");
  return HbmObject(env, hbm);
}

Napi::Value DcmiLibrary::V2GetUtilizationRate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  const int input_type = Int32Arg(info, 1, "inputType");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_utilization_rate);
  unsigned int rate = 0;
  Check(env, fn(dev, input_type, &rate), "dcmiv2_get_device_utilization_rate");
  return Napi::Number::New(env, rate);
}

Napi::Value DcmiLibrary::V2GetDeviceNetworkHealth(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  return Async(env, &LibHandle::dcmiv2_get_device_network_health, "dcmiv2_get_device_network_health", true,
               [dev](decltype(&::dcmiv2_get_device_network_health) fn, int64_t* out) {
                 unsigned int result = 0;
                 const int rc = fn(dev, reinterpret_cast<enum dcmi_rdfx_detect_result*>(&result));
                 *out = result;
                 return rc;
               });
}

Napi::Value DcmiLibrary::V2SubscribeFaultEvents(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  return Subscribe(info, 1, DCMI_SYMBOL(dcmiv2_subscribe_fault_event), "dcmiv2_subscribe_fault_event",
                   [dev](decltype(&::dcmiv2_subscribe_fault_event) fn, const struct dcmi_event_filter& filter) {
                     return fn(dev, filter, &dcmi_fault::Trampoline);  // the same trampoline as v1
                   });
}

Napi::Value DcmiLibrary::V2GetElabelInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_device_elabel_info);
  struct dcmi_elabel_info label;
  std::memset(&label, 0, sizeof label);
  Check(env, fn(dev, &label), "dcmiv2_get_device_elabel_info");
  Napi::Object out = Napi::Object::New(env);
  out.Set("productName", FixedString(env, label.product_name, sizeof label.product_name));
  out.Set("model", FixedString(env, label.model, sizeof label.model));
  out.Set("manufacturer", FixedString(env, label.manufacturer, sizeof label.manufacturer));
  out.Set("manufacturerDate", FixedString(env, label.manufacturer_date, sizeof label.manufacturer_date));
  out.Set("serialNumber", FixedString(env, label.serial_number, sizeof label.serial_number));
  return out;
}

Napi::Value DcmiLibrary::V2GetUrmaDeviceCount(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  auto fn = DCMI_SYMBOL(dcmiv2_get_urma_device_cnt);
  unsigned int count = 0;
  Check(env, fn(dev, &count), "dcmiv2_get_urma_device_cnt");
  return Napi::Number::New(env, count);
}

// The EIDs of one URMA device as lower-case hex strings of 32 digits, in the order DCMI lists them.
Napi::Value DcmiLibrary::V2GetUrmaEidList(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dev = Int32Arg(info, 0, "devId");
  const int index = Int32Arg(info, 1, "urmaIndex");
  if (index < 0) throw MakeDcmiError(env, DCMI_ERR_PARAM, "dcmiv2_get_eid_list_by_urma_dev_index", "negative index");
  auto fn = DCMI_SYMBOL(dcmiv2_get_eid_list_by_urma_dev_index);
  dcmi_urma_eid_info_t list[DCMI_URMA_MAX_EIDS];
  std::memset(list, 0, sizeof list);
  unsigned int count = DCMI_URMA_MAX_EIDS;
  Check(env, fn(dev, static_cast<unsigned int>(index), list, &count), "dcmiv2_get_eid_list_by_urma_dev_index");
  if (count > DCMI_URMA_MAX_EIDS) {
    throw MakeDcmiError(env, DCMI_ERR_INTERNAL, "dcmiv2_get_eid_list_by_urma_dev_index",
                        "eid count " + std::to_string(count) + " exceeds " + std::to_string(DCMI_URMA_MAX_EIDS));
  }
  static const char kHex[] = "0123456789abcdef";
  Napi::Array out = Napi::Array::New(env, count);
  for (unsigned int i = 0; i < count; i++) {
    std::string hex;
    for (int k = 0; k < DCMI_URMA_EID_SIZE; k++) {
      hex.push_back(kHex[list[i].eid.raw[k] >> 4]);
      hex.push_back(kHex[list[i].eid.raw[k] & 0xF]);
    }
    out.Set(i, Napi::String::New(env, hex));
  }
  return out;
}

#undef DCMI_SYMBOL

Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  exports.Set("DcmiLibrary", DcmiLibrary::Define(env));
  static const char* const kBound[] = {
#define DCMI_NAME(name, params) #name,
      DCMI_BOUND_FUNCTIONS(DCMI_NAME)
#undef DCMI_NAME
  };
  Napi::Array bound = Napi::Array::New(env, sizeof kBound / sizeof kBound[0]);
  for (size_t i = 0; i < sizeof kBound / sizeof kBound[0]; ++i) bound.Set(static_cast<uint32_t>(i), kBound[i]);
  bound.Freeze();
  exports.Set("boundFunctions", bound);
  static const char* const kBoundV2[] = {
#define DCMI_NAME(name, params) #name,
      DCMI_V2_FUNCTIONS(DCMI_NAME)
#undef DCMI_NAME
  };
  Napi::Array bound_v2 = Napi::Array::New(env, sizeof kBoundV2 / sizeof kBoundV2[0]);
  for (size_t i = 0; i < sizeof kBoundV2 / sizeof kBoundV2[0]; ++i) bound_v2.Set(static_cast<uint32_t>(i), kBoundV2[i]);
  bound_v2.Freeze();
  exports.Set("boundFunctionsV2", bound_v2);
  return exports;
}

}  // namespace
}  // namespace dcmi_addon

namespace lingqu_addon {
void Register(Napi::Env env, Napi::Object exports);  // lingqu_addon.cc: the 910A3 switch library
}

static Napi::Object InitDcmiAddon(Napi::Env env, Napi::Object exports) {
  lingqu_addon::Register(env, exports);
  return dcmi_addon::InitModule(env, exports);
}

NODE_API_MODULE(dcmi_addon, InitDcmiAddon)
