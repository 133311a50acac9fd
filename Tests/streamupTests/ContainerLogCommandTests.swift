import Foundation
import StreamUp
import StreamUpTestSupport
import Testing

/// `--parse cri` as users run it: the built binary following a pod's log under a
/// `/var/log/pods/` layout into the Loki validator.
@Suite(.timeLimit(.minutes(2))) struct ContainerLogCommandTests {
    /// CRI partial lines arrive joined, each entry with the runtime's time and the pod's
    /// namespace, pod and container and the stream as structured metadata; with
    /// `--multiline java`, a trace the container wrote is one entry.
    @Test func criPodLogIntoLoki() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appendingPathComponent("var/log/pods/shop_web-7f9c5_0b1c-22de/app")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let log = directory.appendingPathComponent("0.log").path
        let now = Date()
        let milliseconds = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let time = formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        let long = String(repeating: "x", count: 20_000)
        let frames = (0..<200).map { "\tat com.example.Service.call\($0)(Service.java:\($0 + 1))" }
        var text = "\(time) stdout P \(long.prefix(16_384))\n\(time) stdout F \(long.dropFirst(16_384))\n"
        text += "\(time) stderr F java.lang.IllegalStateException: boom\n"
        text += frames.map { "\(time) stderr F \($0)\n" }.joined()
        text += "\(time) stdout F done\n"
        try text.write(toFile: log, atomically: false, encoding: .utf8)
        try await ReceiverValidator.with("loki") { validator in
            let child = try StreamupProcess([
                "tail", "--from-start", "--to", "loki", "--parse", "cri", "--multiline", "java", "--multiline-timeout", "200ms", log,
                validator.url.absoluteString,
            ])
            let arrived = await onOwnThread {
                poll(within: .seconds(30)) { () -> Bool? in
                    guard let held = validator.count() else { return nil }
                    return held.problems > 0 ? false : held.records >= 3 ? true : nil
                } ?? false
            }
            #expect(arrived, "stderr: \(child.stderr)")
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let stored = try await validator.snapshot()
            #expect(stored.errors.isEmpty, "\(stored.errors)")
            #expect(stored.text == [long, (["java.lang.IllegalStateException: boom"] + frames).joined(separator: "\n"), "done"])
            let metadata = stored.records.map { $0["structured_metadata"] as? [String: String] ?? [:] }
            #expect(metadata.map { $0["namespace"] } == ["shop", "shop", "shop"])
            #expect(metadata.map { $0["pod"] } == ["web-7f9c5", "web-7f9c5", "web-7f9c5"])
            #expect(metadata.map { $0["container"] } == ["app", "app", "app"])
            #expect(metadata.map { $0["stream"] } == ["stdout", "stderr", "stdout"])
            // The runtime's time (the preset keeps a stream's timestamps apart by nanoseconds).
            #expect(stored.records.map { ($0["ts"] as? String)?.dropLast(6) } == Array(repeating: "\(milliseconds)", count: 3))
        }
    }
}
