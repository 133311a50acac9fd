import Foundation

/// The blocking form of ``StreamWriter`` for a producer running on its own thread.
///
/// Thread safety: confined to the producer's thread.
package struct BlockingStreamWriter: Sendable {
    let buffer: any WritableBuffer
    let space: SpaceSignal

    /// Lets `fill` write into free space in place, blocking first while the buffer is full.
    /// The bytes it writes are `mark`'s source bytes (nil: none). Returns what `fill` returned;
    /// throws once the upload failed or the producer was cancelled.
    package func fill(maxLength: Int, mark: SourceMark? = nil, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> Int {
        while true {
            switch try buffer.withWritableSpace(maxLength: maxLength, mark: mark, fill) {
            case .wrote(let count): return count
            case .full: try space.waitBlocking(for: buffer)
            case .failed:
                throw buffer.failure ?? StreamUpError(.bodyStreamClosed, "the upload stopped reading the body")
            }
        }
    }

    /// Notes that the source bytes `mark` describes were read and left out (a filtered record):
    /// the source's position passes them once what was written before is acknowledged.
    package func skip(_ mark: SourceMark) {
        buffer.skip(mark)
    }

    /// Writes all of `bytes` (records made from `mark`'s source bytes, or nil), blocking while
    /// the buffer is full.
    package func write(_ bytes: [UInt8], mark: SourceMark?) throws {
        var offset = 0
        while offset < bytes.count {
            offset += try bytes.withUnsafeBytes { source in
                try fill(maxLength: source.count - offset, mark: mark.map { StreamWriter.mark($0, forBytes: offset, of: source.count) }) { space in
                    space.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + space.count]))
                    return space.count
                }
            }
        }
    }
}
