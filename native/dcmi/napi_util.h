// Argument checks and the error convention of the DCMI addon (src/dcmi/bindings.ts).
//
// C++ checks JavaScript types only: a number must be a finite integer inside the C parameter's type, a string
// a string, and so on. A wrong type throws a TypeError naming the argument, before any library call. The
// range rules of dcmi-abi.md §2.2 are TypeScript's job.
#ifndef ASCEND_NPU_AGENT_NAPI_UTIL_H
#define ASCEND_NPU_AGENT_NAPI_UTIL_H

#include <napi.h>

#include <cstdint>
#include <string>

namespace dcmi_addon {

// An Error with numeric `code` (DCMI return code or -9999x wrapper code) and `fn` (the C function name).
Napi::Error MakeDcmiError(Napi::Env env, int code, const char* fn, const std::string& message);

// The standard error for a non-zero DCMI return code.
Napi::Error MakeCallError(Napi::Env env, int code, const char* fn);

// Throws (as a C++ exception caught by node-addon-api) a TypeError "<name> must be ...".
[[noreturn]] void ThrowTypeError(Napi::Env env, const char* name, const char* expected);

// A number that is a finite integer within [min, max]; TypeError otherwise.
double IntegerArg(Napi::Env env, const Napi::Value& value, const char* name, double min, double max,
                  const char* expected);

int32_t Int32Arg(const Napi::CallbackInfo& info, size_t index, const char* name);
uint32_t Uint32Arg(const Napi::CallbackInfo& info, size_t index, const char* name);
bool BoolArg(const Napi::CallbackInfo& info, size_t index, const char* name);

// A C string argument that may be null/undefined (returns false then).
bool OptionalStringArg(const Napi::CallbackInfo& info, size_t index, const char* name, std::string* out);

// The bytes of a fixed-size C char field up to its first NUL (or the whole field), as a JS string.
Napi::String FixedString(Napi::Env env, const void* field, size_t size);

}  // namespace dcmi_addon

#endif
