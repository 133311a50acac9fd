import Foundation
import StreamUp

/// Several URLs (`streamup URL1 URL2 …`) and `--endpoints failover|balance`: the segments go to
/// several endpoints of one receiver cluster (``EndpointChoice``); each URL gets the preset's
/// path and request, as a single URL does.
extension UploadOptions {
    static let endpointTable: [OptionSpec<UploadOptions>] = [
        .value(
            "--endpoints", valueName: "MODE",
            group: .delivery, help: "with several URLs: failover (default) or balance (round robin)"
        ) { options, value throws(UsageError) in
            guard let choice = EndpointChoice(rawValue: value) else {
                throw UsageError("--endpoints: '\(value)' is not failover or balance")
            }
            options.endpointChoice = choice
        }
    ]

    /// Takes the URL arguments: the first is the URL, the others further endpoints.
    mutating func setURLs(_ urls: [String]) {
        url = urls.first
        moreURLs = Array(urls.dropFirst())
    }

    /// Every URL given, in order.
    var urls: [String] { (url.map { [$0] } ?? []) + moreURLs }

    /// What cannot go with several endpoints (or `--endpoints` without them).
    func validateEndpoints() throws(UsageError) {
        guard !moreURLs.isEmpty else {
            if let endpointChoice { throw UsageError("--endpoints \(endpointChoice.rawValue) needs two URLs or more") }
            return
        }
        if delivery.singleRequest {
            throw UsageError("--single-request cannot go with \(urls.count) URLs: one request goes to one endpoint")
        }
        if delivery.resumable {
            throw UsageError("--resumable cannot go with \(urls.count) URLs: a resumable upload lives at one endpoint")
        }
    }

    /// The library's endpoints for `first` (the URL of `configuration`) and the other URLs given,
    /// each made as the receiver makes a URL (its path when the URL has none).
    /// - Throws: ``StreamUpError`` for a URL that cannot work.
    func endpoints(first: URL) throws -> [URL] {
        guard !moreURLs.isEmpty else { return [] }
        return try [first] + moreURLs.map { try configuration(url: $0).url }
    }
}
