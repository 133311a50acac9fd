import Foundation

/// An input stream and an output stream joined by one fixed-size buffer: bytes written to
/// `output` are read from `input`, in order, exactly once.
///
/// Stands in for `Stream.getBoundStreams(withBufferSize:inputStream:outputStream:)`, which
/// Foundation on Linux does not provide. The buffer is allocated once at creation; neither side
/// allocates per call. A full buffer makes `output.write` return 0 (push back on the producer),
/// never grow.
///
/// Thread safety: the pair is immutable; see each stream for its own rules.
package struct BoundStreamPair {
    /// The side the upload task reads.
    package let input: BoundInputStream
    /// The side producers write.
    package let output: BoundOutputStream

    /// Creates a pair over a buffer of at least `bufferSize` bytes (rounded up to a power of two).
    package init(bufferSize: Int = 64 * 1024) {
        let core = BoundStreamCore(minimumCapacity: bufferSize)
        input = BoundInputStream(core: core)
        output = BoundOutputStream(core: core)
    }

    /// The buffer's capacity in bytes.
    package var capacity: Int { input.core.capacity }
    /// Bytes written into the pair so far.
    package var bytesWritten: Int { input.core.bytesWritten }
    /// Bytes read out of the pair so far.
    package var bytesRead: Int { input.core.bytesRead }
    /// Bytes written and not yet read.
    package var bufferedCount: Int { input.core.bufferedCount }
}
