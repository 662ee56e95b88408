#pragma once
// Runs a function on a thread with a large stack. The analysis walks syntax trees recursively,
// and its depth bounds are counts (the same in every build, so results are deterministic); this
// makes sure the stack, whose frames differ between release, debug and sanitizer builds, is never
// what runs out first. The stack is reserved address space: only the pages used are committed.
#include <cstddef>
#include <exception>
#include <functional>

namespace cg::util {

inline constexpr std::size_t kDeepStackBytes = std::size_t{512} << 20;

// Calls `fn` on a fresh thread with `stack_bytes` of stack and waits for it; an exception thrown by
// `fn` is rethrown here. Falls back to calling `fn` directly if no such thread can be made.
void run_on_deep_stack(const std::function<void()>& fn, std::size_t stack_bytes = kDeepStackBytes);

}  // namespace cg::util
