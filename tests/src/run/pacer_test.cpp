// The pacer's prompt sizing from a server's own token counts: a tokenizer's counts are walked as
// counted; counts no tokenizer gives (a broken or hostile server) never size a prompt past four
// words a token.
#include "run/pacer.h"

#include <doctest/doctest.h>

namespace infdoctor::run {

namespace {
Pacer::Calibration counted(const std::vector<std::pair<double, double>>& sizes) {
  Pacer::Calibration c;
  c.prompt_sizes = sizes;
  for (const auto& [words, tokens] : sizes) c.tokens_per_word.push_back(tokens / words);
  return c;
}
}  // namespace

TEST_CASE("pacer: prompts are sized by the server's own counts, and counts no tokenizer gives never past four words a token") {
  // A tokenizer of 1.25 tokens a word behind a chat template of 12 tokens: walked as counted.
  const auto honest = counted({{8, 22}, {16, 32}, {32, 52}});
  CHECK(*honest.words_for(512) == 400);
  CHECK(*honest.words_for(64) == 42);
  // Counts that barely grow with the words (a thousandth of a token a word): the walk would send
  // hundreds of thousands of words for 512 tokens; it stops at four words a token.
  const auto barely = counted({{8, 3}, {16, 3.008}, {32, 3.024}});
  CHECK(*barely.words_for(512) == 2048);
  // A count that never grows (every prompt "1 token"): no slope, and the ratio says a token is 8-32
  // words: four words a token again.
  const auto flat = counted({{8, 1}, {16, 1}, {32, 1}});
  CHECK(*flat.words_for(512) == 2048);
  // One size seen, of a token for a hundred words.
  const auto one = counted({{100, 1}});
  CHECK(*one.words_for(8192) == 4 * 8192);
  // Nothing seen: nothing to size by.
  CHECK_FALSE(Pacer::Calibration{}.words_for(512));
}

}  // namespace infdoctor::run
