#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Memory of the library's own, straight from the system (`mmap(2)` of anonymous pages): the
/// replay buffer's ring and a segment's complete body. Such pages cost nothing until written,
/// can be handed back while mapped (``release(_:)``), and return to the system at once when
/// unmapped, whatever the allocator keeps.
///
/// Thread safety: stateless; the pages belong to whoever mapped them, who unmaps them once.
enum AnonymousPages {
    /// The size of a page.
    static let size = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// `count` bytes of fresh zeroed pages, readable and writable; nil when the system refuses
    /// (`errno` says why).
    static func map(_ count: Int) -> UnsafeMutableRawBufferPointer? {
        guard let pages = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), pages != MAP_FAILED else {
            return nil
        }
        return UnsafeMutableRawBufferPointer(start: pages, count: count)
    }

    /// Returns mapped `pages` to the system; they are not used after this.
    static func unmap(_ pages: UnsafeMutableRawBufferPointer) {
        munmap(pages.baseAddress, pages.count)
    }

    /// Hands the whole pages of `pages` back to the system while they stay mapped
    /// (`madvise(MADV_DONTNEED)`): they read as zeros when touched again.
    static func release(_ pages: UnsafeMutableRawBufferPointer) {
        _ = madvise(pages.baseAddress, pages.count, MADV_DONTNEED)
    }
}
