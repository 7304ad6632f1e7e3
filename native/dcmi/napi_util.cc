#include "napi_util.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace dcmi_addon {

Napi::Error MakeDcmiError(Napi::Env env, int code, const char* fn, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::Number::New(env, code));
  error.Set("fn", Napi::String::New(env, fn));
  return error;
}

Napi::Error MakeCallError(Napi::Env env, int code, const char* fn) {
  return MakeDcmiError(env, code, fn, std::string(fn) + " failed with code " + std::to_string(code));
}

void ThrowTypeError(Napi::Env env, const char* name, const char* expected) {
  throw Napi::TypeError::New(env, std::string(name) + " must be " + expected);
}

double IntegerArg(Napi::Env env, const Napi::Value& value, const char* name, double min, double max,
                  const char* expected) {
  if (!value.IsNumber()) ThrowTypeError(env, name, expected);
  const double d = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::trunc(d) != d || d < min || d > max) ThrowTypeError(env, name, expected);
  return d;
}

int32_t Int32Arg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  return static_cast<int32_t>(IntegerArg(info.Env(), info[index], name, std::numeric_limits<int32_t>::min(),
                                         std::numeric_limits<int32_t>::max(), "an integer in the int32 range"));
}

uint32_t Uint32Arg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  return static_cast<uint32_t>(IntegerArg(info.Env(), info[index], name, 0, std::numeric_limits<uint32_t>::max(),
                                          "an integer in the uint32 range"));
}

bool BoolArg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (!info[index].IsBoolean()) ThrowTypeError(info.Env(), name, "a boolean");
  return info[index].As<Napi::Boolean>().Value();
}

bool OptionalStringArg(const Napi::CallbackInfo& info, size_t index, const char* name, std::string* out) {
  const Napi::Value value = info[index];
  if (value.IsNull() || value.IsUndefined()) return false;
  if (!value.IsString()) ThrowTypeError(info.Env(), name, "a string or null");
  *out = value.As<Napi::String>().Utf8Value();
  if (out->find('\0') != std::string::npos) ThrowTypeError(info.Env(), name, "a string without NUL characters");
  return true;
}

Napi::String FixedString(Napi::Env env, const void* field, size_t size) {
  const char* text = static_cast<const char*>(field);
  const void* nul = std::memchr(text, '\0', size);
  const size_t length = nul ? static_cast<size_t>(static_cast<const char*>(nul) - text) : size;
  return Napi::String::New(env, text, length);
}

}  // namespace dcmi_addon
