import Foundation
import StreamUp

/// HTTP Basic authentication (RFC 7617): `Authorization: Basic base64(user:password)`, the
/// user name and password encoded as UTF-8 (the `charset="UTF-8"` the RFC allows servers to ask
/// for, and what curl sends).
///
/// Thread safety: a value type.
struct BasicCredentials: Sendable, Equatable {
    let user: String
    let password: String

    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) when the user name holds a colon
    ///   (RFC 7617 §2: it would end the name) or either holds a control character.
    init(user: String, password: String) throws {
        guard !user.contains(":") else {
            throw StreamUpError(.invalidConfiguration, "the user name '\(user)' contains ':', which Basic authentication cannot carry (RFC 7617)")
        }
        let isControl: (Unicode.Scalar) -> Bool = { $0.value < 0x20 || $0.value == 0x7F }
        guard !user.unicodeScalars.contains(where: isControl) else {
            throw StreamUpError(.invalidConfiguration, "the user name contains a control character, which Basic authentication cannot carry")
        }
        guard !password.unicodeScalars.contains(where: isControl) else {
            throw StreamUpError(.invalidConfiguration, "the password contains a control character (a line break?), which Basic authentication cannot carry")
        }
        self.user = user
        self.password = password
    }

    /// `Authorization: Basic …`.
    var header: UploadConfiguration.Header {
        UploadConfiguration.Header(name: "Authorization", value: "Basic " + Data("\(user):\(password)".utf8).base64EncodedString())
    }
}
