#include "runtime/event_id_set.hpp"

#include <array>
#include <bit>
#include <optional>
#include <stdexcept>
#include <string>

namespace cg::runtime {
namespace {

constexpr std::size_t kMaxPrefixes = 16;  // phases × {op, edge} with room to spare
constexpr std::size_t kMaxPrefixBytes = 64;
constexpr unsigned kPageBits = 15;  // 32 Ki counters (4 KiB) per page

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

std::uint64_t fingerprint(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then mixed: cheap and well spread
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return mix(h);
}

std::optional<std::uint64_t> decimal(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

struct Shape {
  std::string_view prefix;
  std::uint64_t counter;
};

std::optional<Shape> split_shaped(std::string_view id) {
  auto last = id.rfind('-');
  if (last == std::string_view::npos || last == 0) return std::nullopt;
  auto counter = decimal(id.substr(last + 1));
  auto mid = id.rfind('-', last - 1);
  if (!counter || mid == std::string_view::npos || mid == 0) return std::nullopt;
  if (!decimal(id.substr(mid + 1, last - mid - 1))) return std::nullopt;
  if (mid > kMaxPrefixBytes) return std::nullopt;
  return Shape{id.substr(0, mid), *counter};
}

}  // namespace

struct EventIdSet::Prefix {
  std::string text;
  std::unordered_map<std::uint64_t, std::unique_ptr<std::array<std::uint64_t, 512>>> pages;
  // Counters arrive nearly in order: remember the last page to skip the map lookup.
  std::uint64_t last_page = ~0ull;
  std::array<std::uint64_t, 512>* last = nullptr;

  // The counter's page; allocated when `budget` allows, else null (the id is then fingerprinted).
  std::array<std::uint64_t, 512>* page_of(std::uint64_t counter, std::size_t* budget) {
    std::uint64_t page = counter >> kPageBits;
    if (page == last_page) return last;
    auto it = pages.find(page);
    if (it == pages.end()) {
      if (*budget == 0) return nullptr;
      --*budget;
      it = pages.emplace(page, std::make_unique<std::array<std::uint64_t, 512>>()).first;
    }
    last = it->second.get();
    last_page = page;
    return last;
  }
  bool has_page(std::uint64_t counter) const { return pages.count(counter >> kPageBits) != 0; }

  // Returns true when the bit was already set; the page must exist (page_of).
  bool test_and_set(std::uint64_t counter) {
    std::uint64_t bit = counter & ((1u << kPageBits) - 1);
    std::uint64_t& word = (*last)[bit >> 6];
    std::uint64_t mask = 1ull << (bit & 63);
    bool was = (word & mask) != 0;
    word |= mask;
    return was;
  }
};

EventIdSet::EventIdSet(Limits limits) : table_(1024, 0), limits_(limits) {}
EventIdSet::~EventIdSet() = default;

std::uint64_t EventIdSet::key_of(std::string_view id, bool* shaped) const {
  *shaped = false;
  if (auto s = split_shaped(id)) {
    for (std::size_t i = 0; i < prefixes_.size(); ++i) {
      if (prefixes_[i]->text == s->prefix && prefixes_[i]->has_page(s->counter)) {
        *shaped = true;
        return mix(s->counter ^ (static_cast<std::uint64_t>(i) << 58) ^ 0x9e3779b97f4a7c15ull);
      }
    }
  }
  return fingerprint(id);
}

void EventIdSet::insert(std::string_view id) {
  if (auto s = split_shaped(id)) {
    Prefix* p = nullptr;
    std::size_t index = 0;
    for (; index < prefixes_.size(); ++index) {
      if (prefixes_[index]->text == s->prefix) {
        p = prefixes_[index].get();
        break;
      }
    }
    if (!p && prefixes_.size() < kMaxPrefixes) {
      prefixes_.push_back(std::make_unique<Prefix>());
      prefixes_.back()->text = std::string(s->prefix);
      p = prefixes_.back().get();
    }
    if (p && p->page_of(s->counter, &page_budget_)) {
      if (p->test_and_set(s->counter)) {
        add_suspect(
            mix(s->counter ^ (static_cast<std::uint64_t>(index) << 58) ^ 0x9e3779b97f4a7c15ull));
      }
      return;
    }
  }
  std::uint64_t h = fingerprint(id) | 1;  // never 0, the empty marker
  if ((table_used_ + 1) * 2 > table_.size() && table_used_ < limits_.remembered) {
    std::vector<std::uint64_t> bigger(table_.size() * 2, 0);
    for (std::uint64_t v : table_) {
      if (!v) continue;
      std::size_t i = static_cast<std::size_t>(v) & (bigger.size() - 1);
      while (bigger[i])
        i = (i + 1) & (bigger.size() - 1);
      bigger[i] = v;
    }
    table_.swap(bigger);
  }
  std::size_t i = static_cast<std::size_t>(h) & (table_.size() - 1);
  while (table_[i]) {
    if (table_[i] == h) {
      add_suspect(h);
      return;
    }
    i = (i + 1) & (table_.size() - 1);
  }
  if (table_used_ >= limits_.remembered) {
    throw std::length_error(
        "trace has more than " + std::to_string(limits_.remembered) +
        " event ids that are not shaped like the profiler's `<phase>-op-<step>-<counter>` "
        "(each is remembered to check uniqueness; the reader's limit is " +
        std::to_string(limits_.remembered) + " such ids)");
  }
  table_[i] = h;
  ++table_used_;
}

void EventIdSet::add_suspect(std::uint64_t key) {
  if (suspects_.size() >= limits_.suspects && !suspects_.count(key)) {
    throw std::length_error(
        "trace has more than " + std::to_string(limits_.suspects) +
        " event ids that may repeat an earlier one (repeated ids, or `<prefix>-<step>-<counter>` "
        "ids whose counter restarts; each is compared in full; the reader's limit is " +
        std::to_string(limits_.suspects) + ")");
  }
  suspects_.insert(key);
}

bool EventIdSet::is_suspect(std::string_view id) const {
  bool shaped = false;
  std::uint64_t key = key_of(id, &shaped);
  if (!shaped) key |= 1;
  return suspects_.count(key) != 0;
}

std::size_t EventIdSet::memory_bytes() const {
  std::size_t bytes = table_.size() * sizeof(std::uint64_t) + suspects_.size() * 32;
  for (const auto& p : prefixes_)
    bytes += p->pages.size() * (4096 + 48);
  return bytes;
}

}  // namespace cg::runtime
