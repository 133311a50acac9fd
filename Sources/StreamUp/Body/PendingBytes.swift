/// The copy every body stage makes of bytes it has ready (a literal, a batch of streams) into
/// the buffer URLSession hands it.
extension Array where Element == UInt8 {
    /// Copies the bytes from `offset` into `buffer` from `position`, as many as fit; returns how
    /// many were copied.
    func copyBytes(from offset: Int, into buffer: UnsafeMutableRawBufferPointer, at position: Int) -> Int {
        let count = Swift.min(self.count - offset, buffer.count - position)
        withUnsafeBytes { bytes in
            buffer.baseAddress!.advanced(by: position).copyMemory(from: bytes.baseAddress!.advanced(by: offset), byteCount: count)
        }
        return count
    }
}
