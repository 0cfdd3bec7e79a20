// ctest learns each test case by name (doctest_discover_tests) and keeps the names as a CMake
// list: a ';' in a name splits it into filters that match nothing, and the test silently never
// runs. Every TEST_CASE name in tests/ must survive that.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace {

TEST_CASE("tests: every test case name is one ctest can run, with no semicolon") {
  namespace fs = std::filesystem;
  const std::regex name(R"re(TEST_CASE\("((?:[^"\\]|\\.)*)")re");
  int names = 0;
  for (const auto& e : fs::recursive_directory_iterator(std::string(INFDOCTOR_SOURCE_DIR) + "/tests")) {
    if (!e.is_regular_file() || e.path().extension() != ".cpp") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) {
      ++names;
      CAPTURE(e.path().filename().string());
      CHECK_MESSAGE((*it)[1].str().find(';') == std::string::npos, (*it)[1].str());
    }
  }
  CHECK(names > 100);
}

}  // namespace
