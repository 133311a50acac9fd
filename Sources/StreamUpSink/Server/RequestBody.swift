/// Where one request's body bytes go as they arrive: counted always, hashed when asked, written
/// to a ``BodyFile`` and/or kept in memory when configured. Never holds more than the
/// configured memory cap, and does no allocation per append unless keeping the body in memory.
///
/// Thread safety: a value type that is never shared; owned by one connection.
struct RequestBody {
    /// Why an append failed.
    enum Failure: Error {
        case storage(SinkError)
        case memoryLimitExceeded(limit: Int)
    }

    /// What a finished body amounted to.
    struct Summary {
        var byteCount: Int
        var sha256: String?
        var body: [UInt8]?
        var storedFile: String?
        var storageError: SinkError?
    }

    private(set) var byteCount = 0
    private var hasher: SHA256?
    private var file: BodyFile?
    private var memory: [UInt8]?
    private let memoryLimit: Int

    init(hash: Bool, file: BodyFile?, keepInMemory: Bool, memoryLimit: Int) {
        hasher = hash ? SHA256() : nil
        self.file = file
        memory = keepInMemory ? [] : nil
        self.memoryLimit = memoryLimit
    }

    /// Adds the next body bytes.
    mutating func append(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        byteCount += bytes.count
        hasher?.update(bytes)
        if let file {
            do {
                try file.write(bytes)
            } catch {
                throw .storage(error)
            }
        }
        if memory != nil {
            guard memory!.count + bytes.count <= memoryLimit else {
                throw .memoryLimitExceeded(limit: memoryLimit)
            }
            memory!.append(contentsOf: bytes)
        }
    }

    /// Ends the body: a complete one gets its file renamed to `.body`, an incomplete one keeps
    /// `.partial`. Call exactly once.
    consuming func finish(complete: Bool) -> Summary {
        var summary = Summary(
            byteCount: byteCount,
            sha256: hasher.map { SHA256.hex($0.finalize()) },
            body: memory)
        if let file {
            if complete {
                do {
                    summary.storedFile = try file.complete()
                } catch {
                    summary.storedFile = file.partialPath
                    summary.storageError = error
                }
            } else {
                summary.storedFile = file.abandon()
            }
        }
        return summary
    }
}
