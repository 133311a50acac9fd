import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The platform's cost of waiting: `streamup-bench --bare-post URL COUNT` sends COUNT small
/// `POST`s one after another, each a `URLSession.uploadTask(with:from:)` of a few bytes on one
/// ephemeral session, waiting for each answer before the next. No streamup code runs, so the
/// child's `rusage` is URLSession's own. Exit status: 0 when every answer was 200.
///
/// Thread safety: runs on the main thread; completion handlers run on the session's queue and
/// hand their outcome over through a semaphore.
enum BarePoster {
    static let flag = "--bare-post"

    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2, let url = URL(string: arguments[0]), let count = Int(arguments[1]), count > 0 else {
            Progress.error("usage: streamup-bench \(flag) URL COUNT")
            return 64
        }
        let session = URLSession(configuration: .ephemeral)
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        for _ in 0..<count {
            let done = DispatchSemaphore(value: 0)
            let status = LockedValue(0)
            session.uploadTask(with: request, from: Data(WaitRun.line.utf8)) { _, response, _ in
                status.set((response as? HTTPURLResponse)?.statusCode ?? 0)
                done.signal()
            }.resume()
            done.wait()
            guard status.get() == 200 else {
                Progress.error("bare post: status \(status.get())")
                return 1
            }
        }
        session.finishTasksAndInvalidate()
        return 0
    }
}
