#pragma once
// Clang's thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html) and
// annotated mutex types, so that `-Wthread-safety` (the clang build of ./scripts/test) checks that
// shared state is only touched with its lock held. Under g++ the macros expand to nothing.
//
// libstdc++'s std::mutex carries no annotations, so annotated state is guarded by kiln::Mutex (a
// std::mutex underneath) or kiln::SharedMutex, and locked with MutexLock / ReaderLock / WriterLock:
//
//   mutable kiln::Mutex mutex_;
//   std::vector<Job> queue_ GUARDED_BY(mutex_);
//   std::condition_variable changed_;
//
//   void push(Job job) EXCLUDES(mutex_) {
//     kiln::MutexLock lock(mutex_);
//     queue_.push_back(std::move(job));
//     changed_.notify_one();
//   }
//   Job pop() EXCLUDES(mutex_) {
//     kiln::MutexLock lock(mutex_);
//     changed_.wait(lock.native(), [&]() REQUIRES(mutex_) { return !queue_.empty(); });
//     ...
//   }
//
// A std::condition_variable waits on MutexLock::native() (the std::unique_lock inside the guard);
// the analysis treats the lock as held throughout, which is true on every return from wait().
// A lambda that reads guarded state needs `REQUIRES(mutex_)` (the analysis does not see that it
// runs under the caller's lock).

#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define KILN_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define KILN_THREAD_ANNOTATION(x)
#endif

// On a type: it is a lock (a "capability") the analysis tracks.
#define CAPABILITY(x) KILN_THREAD_ANNOTATION(capability(x))
// On an RAII type: its constructor acquires and its destructor releases a capability.
#define SCOPED_CAPABILITY KILN_THREAD_ANNOTATION(scoped_lockable)
// On a data member: read or written only with the given lock held (shared suffices for reads).
#define GUARDED_BY(x) KILN_THREAD_ANNOTATION(guarded_by(x))
// On a pointer member: the pointee is guarded (the pointer itself is not).
#define PT_GUARDED_BY(x) KILN_THREAD_ANNOTATION(pt_guarded_by(x))
// On a lock member: it is always taken before / after the other lock (lock order).
#define ACQUIRED_BEFORE(...) KILN_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) KILN_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
// On a function: the caller must hold the lock (exclusively / at least shared).
#define REQUIRES(...) KILN_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) KILN_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// On a function: it takes / releases the lock and returns with it held / not held.
#define ACQUIRE(...) KILN_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) KILN_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) KILN_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) KILN_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) KILN_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) KILN_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) KILN_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
// On a function: the caller must NOT hold the lock (the function takes it; no self-deadlock).
#define EXCLUDES(...) KILN_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// On a function: asserts at run time that the lock is held; the analysis then assumes it.
#define ASSERT_CAPABILITY(x) KILN_THREAD_ANNOTATION(assert_capability(x))
// On a getter: it returns a reference to the given lock.
#define RETURN_CAPABILITY(x) KILN_THREAD_ANNOTATION(lock_returned(x))
// On a function: the analysis skips it. Say why in a comment where it is used.
#define NO_THREAD_SAFETY_ANALYSIS KILN_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace kiln {

// A std::mutex the analysis knows. Meets Lockable, so std::scoped_lock and
// std::condition_variable_any accept it; native() serves std::condition_variable.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mutex_.try_lock(); }

  std::mutex& native() { return mutex_; }

 private:
  std::mutex mutex_;
};

// A std::shared_mutex the analysis knows: writers exclusive, readers shared.
class CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mutex_.try_lock(); }
  void lock_shared() ACQUIRE_SHARED() { mutex_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { mutex_.unlock_shared(); }
  bool try_lock_shared() TRY_ACQUIRE_SHARED(true) { return mutex_.try_lock_shared(); }

 private:
  std::shared_mutex mutex_;
};

// Holds a Mutex from construction to destruction, like std::unique_lock (which it wraps, so a
// std::condition_variable can wait on native()). unlock()/lock() release and retake it early.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : lock_(mutex.native()) {}
  ~MutexLock() RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() RELEASE() { lock_.unlock(); }
  void lock() ACQUIRE() { lock_.lock(); }

  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

// Holds a SharedMutex exclusively (writers).
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~WriterLock() RELEASE() { mutex_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mutex_;
};

// Holds a SharedMutex shared (readers).
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mutex) ACQUIRE_SHARED(mutex) : mutex_(mutex) {
    mutex_.lock_shared();
  }
  ~ReaderLock() RELEASE() { mutex_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mutex_;
};

}  // namespace kiln
