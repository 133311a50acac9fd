import Foundation

/// The write path: a record encoded as one line, written now if it fits, else waited for as
/// ``TelemetryEmitter/Options/whenFull`` allows, then counted as accepted or dropped.
extension TelemetryEmitter {
    /// What became of a record.
    ///
    /// Thread safety: a value type.
    enum Outcome: Equatable {
        case written
        case dropped(DropCause)
    }

    /// Writes `bytes` now if they fit, else waits for space as `whenFull` allows.
    func write(_ bytes: [UInt8]) async throws -> Outcome {
        let now = tryWrite(bytes)
        guard case .dropped(let cause) = now, cause == .full || cause == .busy, whenFull.patience > .zero else { return now }
        let writer = uploader.bufferWriter
        let end = clock.now.advanced(by: whenFull.patience)
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await writer.writeWhole(bytes)
                return true
            }
            group.addTask { [clock] in
                try await clock.sleep(until: end)
                return false
            }
            // The first to end cancels the other; a write cancelled while it waits writes nothing.
            var written = false
            var failure: (any Error)?
            while let result = await group.nextResult() {
                group.cancelAll()
                switch result {
                case .success(let wrote): written = written || wrote
                case .failure(let error) where !(error is CancellationError): failure = error
                case .failure: break
                }
            }
            if written { return .written }
            try Task.checkCancellation()
            if failure != nil { return .dropped(stoppedCause ?? .gaveUp) }
            return .dropped(.fullTooLong)
        }
    }

    /// Writes `bytes` if they fit now, saying why not.
    func tryWrite(_ bytes: [UInt8]) -> Outcome {
        do {
            switch try bytes.withUnsafeBytes({ try uploader.bufferWriter.tryWrite($0) }) {
            case .written: return .written
            case .full: return .dropped(.full)
            case .busy: return .dropped(.busy)
            }
        } catch {
            return .dropped(stoppedCause ?? .gaveUp)
        }
    }

    func record(_ outcome: Outcome) {
        switch outcome {
        case .written: counters.accept()
        case .dropped(let cause): noteDrop(cause)
        }
    }

    func line(for value: some Encodable) throws -> [UInt8] {
        var bytes = [UInt8](try encoder.encode(value))
        if let recordFormatter {
            // (The formatter's own `\n` ends the record.)
            let now = Date()
            bytes = recordFormatter.withLock { $0.record(bytes, readAt: now) }
        } else {
            bytes.append(UInt8(ascii: "\n"))
        }
        guard bytes.count <= maxRecordBytes else {
            throw StreamUpError(
                .invalidConfiguration,
                "a record of \(bytes.count) bytes is longer than a record may be (\(maxRecordBytes) bytes: the delivery's maxRecordBytes, at most the buffer's size); it was not sent"
            )
        }
        return bytes
    }
}
