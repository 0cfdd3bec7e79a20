#pragma once
// A rule expression: muParser parses and evaluates; names may contain dots (dns.p50_ms).
// compile() reports the position of a syntax error; variables() lists the names used, so the
// loader can check each against the metrics the checks declare.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace infdoctor::rules {

class Expression {
 public:
  static core::Result<Expression> compile(const std::string& text);
  Expression(Expression&&) noexcept;
  Expression& operator=(Expression&&) noexcept;
  ~Expression();

  const std::string& text() const { return text_; }
  const std::vector<std::string>& variables() const { return variables_; }
  // Nothing when a variable is not in `values` (not measured), or the result is not finite.
  std::optional<double> eval(const std::map<std::string, double>& values) const;

  struct Impl;  // muParser and the variables' storage

 private:
  Expression();
  std::unique_ptr<Impl> impl_;
  std::string text_;
  std::vector<std::string> variables_;
};

}  // namespace infdoctor::rules
