#pragma once
// The rule files of rules/, as the build embedded them: the default when --rules is not given.
#include <vector>

#include "rules/rules.h"

namespace infdoctor::rules {

const std::vector<RuleFile>& embedded_rules();

}  // namespace infdoctor::rules
