#include "rules/expression.h"

#include <cmath>

#include <muParser.h>

namespace infdoctor::rules {

struct Expression::Impl {
  mu::Parser parser;
  std::map<std::string, std::unique_ptr<double>> storage;
};

namespace {
// muParser asks for storage of every name it meets while parsing; the names used are then known.
double* make_variable(const char* name, void* user) {
  auto* impl = static_cast<Expression::Impl*>(user);
  auto& slot = impl->storage[name];
  if (!slot) slot = std::make_unique<double>(0.0);
  return slot.get();
}
}  // namespace

Expression::Expression() : impl_(std::make_unique<Impl>()) {}
Expression::Expression(Expression&&) noexcept = default;
Expression& Expression::operator=(Expression&&) noexcept = default;
Expression::~Expression() = default;

core::Result<Expression> Expression::compile(const std::string& text) {
  Expression e;
  e.text_ = text;
  try {
    e.impl_->parser.DefineNameChars("0123456789_.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
    e.impl_->parser.SetVarFactory(&make_variable, e.impl_.get());
    e.impl_->parser.SetExpr(text);
    for (const auto& [name, _] : e.impl_->parser.GetUsedVar()) e.variables_.push_back(name);
    // A first evaluation finds errors that parsing alone lets through.
    (void)e.impl_->parser.Eval();
  } catch (const mu::Parser::exception_type& err) {
    std::string msg = err.GetMsg();
    const int pos = err.GetPos();
    // muParser's own message usually names the position already; say it once.
    if (pos >= 0 && msg.find("position") == std::string::npos) msg += " at position " + std::to_string(pos);
    return core::make_error(core::ErrorCode::ConfigError, msg, std::to_string(pos));
  }
  return e;
}

std::optional<double> Expression::eval(const std::map<std::string, double>& values) const {
  for (const auto& name : variables_) {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    *impl_->storage[name] = it->second;
  }
  try {
    const double v = impl_->parser.Eval();
    if (!std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const mu::Parser::exception_type&) {
    return std::nullopt;
  }
}

}  // namespace infdoctor::rules
