# Writes OUT: a C++ file holding every rules/*.json as a string, so the binary diagnoses from any
# directory. Run by the build whenever a rule file changes.
file(GLOB files "${RULES_DIR}/*.json")
list(SORT files)
set(body "// Generated from rules/*.json by src/rules/embed_rules.cmake. Do not edit.\n#include \"rules/embedded.h\"\n\nnamespace infdoctor::rules {\n\nconst std::vector<RuleFile>& embedded_rules() {\n  static const std::vector<RuleFile> kFiles = {\n")
foreach(f ${files})
  get_filename_component(name "${f}" NAME)
  file(READ "${f}" content)
  string(APPEND body "      {\"rules/${name}\", R\"infdoctor_rule(${content})infdoctor_rule\"},\n")
endforeach()
string(APPEND body "  };\n  return kFiles;\n}\n\n}  // namespace infdoctor::rules\n")
file(WRITE "${OUT}.tmp" "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
