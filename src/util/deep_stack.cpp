#include "util/deep_stack.hpp"

#include <pthread.h>

namespace cg::util {
namespace {

struct Job {
  const std::function<void()>* fn;
  std::exception_ptr error;
};

void* trampoline(void* arg) {
  auto* job = static_cast<Job*>(arg);
  try {
    (*job->fn)();
  } catch (...) {
    job->error = std::current_exception();
  }
  return nullptr;
}

}  // namespace

void run_on_deep_stack(const std::function<void()>& fn, std::size_t stack_bytes) {
  Job job{&fn, nullptr};
  pthread_attr_t attr;
  bool started = false;
  pthread_t thread{};
  if (pthread_attr_init(&attr) == 0) {
    if (pthread_attr_setstacksize(&attr, stack_bytes) == 0)
      started = pthread_create(&thread, &attr, trampoline, &job) == 0;
    pthread_attr_destroy(&attr);
  }
  if (!started) {
    fn();  // no thread to be had: the depth bounds still hold on the caller's stack
    return;
  }
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace cg::util
