import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// ``StateFileOwner``: one owner per state file, and the words when the owner is this very
/// process (another pipeline of `streamup run` naming the file `./s1` where one says `s1`, or a
/// copy that is stopping) rather than another streamup.
@Suite struct StateFileOwnerTests {
    /// A second claim of one state file under another spelling, in the same process, is refused
    /// as held by this process; once the first owner lets go, the file can be claimed again.
    @Test func aStateFileHeldByThisProcessIsNotCalledAnotherProcesss() throws {
        let scratch = try TemporaryDirectory()
        var first: StateFileOwner? = try StateFileOwner.claim(scratch.file("s1"))
        #expect(first != nil)
        #expect {
            _ = try StateFileOwner.claim(scratch.path + "/./s1")
        } throws: { error in
            "\(error)".contains("is in use by this streamup process already") && !"\(error)".contains("another streamup process")
        }
        first = nil
        #expect(throws: Never.self) { _ = try StateFileOwner.claim(scratch.path + "/./s1") }
    }
}
