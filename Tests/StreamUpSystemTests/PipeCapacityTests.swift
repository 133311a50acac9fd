import StreamUpSystem
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Enlarging a pipe's buffer with F_SETPIPE_SZ.
struct PipeCapacityTests {
    /// A pipe takes a larger buffer (read back with F_GETPIPE_SZ); a regular file is left alone.
    @Test func enlargesPipesOnly() throws {
        var ends: [CInt] = [-1, -1]
        try SystemCall<SystemCallError>.runBlocking("pipe") { pipe(&ends) }
        defer { ends.forEach { SystemCall<SystemCallError>.close($0) } }
        #if os(Linux)
        let getPipeSize: CInt = 1032  // F_GETPIPE_SZ (<linux/fcntl.h>)
        let before = fcntl(ends[1], getPipeSize)
        #expect(PipeCapacity.enlarge(ends[1], to: 256 * 1024))
        #expect(fcntl(ends[1], getPipeSize) == 256 * 1024)
        #expect(before < 256 * 1024)
        let file = try SystemCall<SystemCallError>.runBlocking("open") {
            SystemCall<SystemCallError>.open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        }
        defer { SystemCall<SystemCallError>.close(file) }
        #expect(PipeCapacity.enlarge(file, to: 256 * 1024) == false)
        #endif
    }
}
