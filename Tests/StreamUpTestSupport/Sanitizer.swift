#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether this test binary was built with a sanitizer (`swift build --sanitize=thread`,
/// `address`, `undefined`), found by looking up the sanitizer runtime's entry points.
///
/// A sanitizer keeps shadow memory for every byte the program touches, so the resident size of
/// a sanitized `streamup` says nothing about streamup's own memory: tests that measure RSS are
/// disabled under one, with ``rssSkipReason`` shown as the reason.
///
/// Thread safety: immutable after first use; readable from anywhere.
public enum Sanitizer {
    /// The sanitizer runtime linked into this process, if any ("thread", "address", "undefined").
    public static let active: String? = {
        guard let process = dlopen(nil, RTLD_NOW) else { return nil }
        let runtimes = [("thread", "__tsan_init"), ("address", "__asan_init"), ("undefined", "__ubsan_handle_builtin_unreachable")]
        return runtimes.first { dlsym(process, $0.1) != nil }?.0
    }()

    /// True when no sanitizer is linked in.
    public static var isOff: Bool { active == nil }

    /// Why an RSS test does not run under a sanitizer.
    public static var rssSkipReason: String {
        "measures resident memory, which a sanitizer's shadow memory (\(active ?? "none") here) makes meaningless"
    }
}
