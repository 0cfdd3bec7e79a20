#pragma once
// Enums that are written to and read from text (results.json, rule files, flags) are one table of
// rows {value, name}, in enum order, with a size check beside it: the pattern of kErrorTable.
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace infdoctor::core {

template <class E>
struct NameRow {
  E value;
  std::string_view name;
};

// The table is in enum order: row i names the value i.
template <class E, std::size_t N>
constexpr bool in_enum_order(const std::array<NameRow<E>, N>& table) {
  for (std::size_t i = 0; i < N; ++i)
    if (static_cast<std::size_t>(table[i].value) != i) return false;
  return true;
}

template <class E, std::size_t N>
constexpr std::string_view name_of(const std::array<NameRow<E>, N>& table, E v) {
  const auto i = static_cast<std::size_t>(v);
  return i < N ? table[i].name : std::string_view("?");
}

template <class E, std::size_t N>
constexpr std::optional<E> value_of(const std::array<NameRow<E>, N>& table, std::string_view name) {
  for (const auto& row : table)
    if (row.name == name) return row.value;
  return std::nullopt;
}

}  // namespace infdoctor::core
