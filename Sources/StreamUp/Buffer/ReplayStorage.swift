/// Where a `ReplayBuffer` keeps its bytes, addressed by absolute stream offset: a ring in
/// memory (``MemoryReplayStorage``) or files on disk (`SpoolStorage`).
///
/// The buffer decides what is held (from its acknowledged offset to its written offset, never
/// more than ``capacity``); a storage only stores and returns bytes. Writes happen in two steps
/// so that a producer can fill the space in place: ``writableSpace(at:maxLength:)`` gives room
/// (the ring itself, or a staging buffer), ``commit(_:count:at:mark:)`` keeps what was put there.
///
/// Thread safety: the writer whose turn it is calls `writableSpace` and `commit`; readers (the
/// segments in flight, a live reader, a record-end search) call `read` for offsets between the
/// acknowledged and the committed ones, which the writer does not touch; `acknowledge` comes
/// from the delivery task and the checkpoint task, possibly at once, and only frees bytes below
/// the acknowledged offset, which nobody reads any more. The buffer's cursors keep those
/// regions apart, so a storage needs no lock for its bytes; it orders its own
/// acknowledgements (the buffer calls it outside its lock).
protocol ReplayStorage: AnyObject, Sendable {
    /// The most bytes held at once.
    var capacity: Int { get }
    /// Whether stored bytes survive the process (a spool on disk).
    var isDurable: Bool { get }
    /// Room for the bytes at `offset` (the written offset): at least one byte and at most
    /// `maxLength` (which the buffer keeps within its free space), in one contiguous piece.
    func writableSpace(at offset: Int, maxLength: Int) -> UnsafeMutableRawBufferPointer
    /// Keeps the first `count` bytes of `space` (from ``writableSpace(at:maxLength:)``) as the
    /// stream's bytes at `offset`, which came from `mark`.
    func commit(_ space: UnsafeMutableRawBufferPointer, count: Int, at offset: Int, mark: SourceMark?) throws(StreamUpError)
    /// Copies held bytes from `offset` into `destination`; returns how many, at least one.
    func read(at offset: Int, into destination: UnsafeMutableRawBufferPointer) throws(StreamUpError) -> Int
    /// The bytes below `offset` are acknowledged and will never be read again; a storage may
    /// free what is below `releasable` (at most `offset`: a spool keeps bytes whose source
    /// positions are not saved yet). `written` is the buffer's written offset as it was told
    /// (`written - offset` bytes are still held; the writer may have added more since).
    /// Two calls may come at once and in either order: a storage takes them one at a time, never
    /// lets its acknowledged offset go back, and returns only once what it released is gone
    /// (the buffer hands that room to the writer after this returns).
    func acknowledge(upTo offset: Int, releasingBelow releasable: Int, written: Int) throws(StreamUpError)
    /// The input ended at `offset`: a last record without `\n` there is whole.
    func inputEnded(at offset: Int)
    /// The bytes from `offset` (all written, none read) are not part of the stream: a stop
    /// dropped the record they began.
    func discard(from offset: Int)
    /// ``commit(_:count:at:mark:)`` threw `error`: when to try the same commit again, when the
    /// error is a lack of room that may pass (a full disk: ``StorageRoom``); nil when it is final.
    func retryTime(after error: StreamUpError) -> UploadClock.Instant?
}

extension ReplayStorage {
    func inputEnded(at offset: Int) {}
    func discard(from offset: Int) {}
    func retryTime(after error: StreamUpError) -> UploadClock.Instant? { nil }
}
