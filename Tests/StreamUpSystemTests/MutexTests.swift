import Foundation
import StreamUpSystem
import Testing

/// The package's lock: exclusion between threads, and values and errors passed through.
struct MutexTests {
    /// Four threads each adding 1 a thousand times, read-modify-write in two steps inside the
    /// lock, lose no update.
    @Test func threadsDoNotLoseUpdates() {
        let counter = Mutex(0)
        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            Thread {
                for _ in 0..<1_000 {
                    counter.withLock { value in
                        let read = value
                        sched_yield()  // widen the window another thread would need to interleave
                        value = read + 1
                    }
                }
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(counter.withLock { $0 } == 4_000)
    }

    /// `withLock` returns the body's result and rethrows its typed error, leaving the value as
    /// the body left it.
    @Test func resultAndErrorPassThrough() {
        struct Refused: Error, Equatable {}
        let mutex = Mutex([1, 2])
        #expect(mutex.withLock { $0.count } == 2)
        #expect(throws: Refused()) {
            try mutex.withLock { (value) throws(Refused) in
                value.append(3)
                throw Refused()
            }
        }
        #expect(mutex.withLock { $0 } == [1, 2, 3])
    }
}
