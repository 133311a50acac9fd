import Foundation

extension StreamUploader {
    /// Where the bytes the server has not acknowledged yet are held. The producer waits while
    /// the storage is full: nothing is dropped.
    ///
    /// Thread safety: a value type.
    public enum Storage: Sendable, Hashable {
        /// In memory, at most `capacity` bytes; lost if the process ends.
        case memory(capacity: Int)
        /// In files in `directory` (see `SpoolStorage`): they survive a crash, and the next
        /// run with the same spool sends them first. `capacity` nil: 1 GiB or half the free
        /// space of the file system when the spool is opened, whichever is smaller.
        ///
        /// Either capacity is kept as given: it must hold one record (`maxRecordBytes`, else
        /// the uploader refuses it), and segments are at most half of it (`segmentBytes` is
        /// lowered to that), so the next one fills while one is in flight.
        case spool(directory: URL, capacity: Int? = nil)
    }
}
