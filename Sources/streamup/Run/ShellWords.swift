import Foundation

/// Splits a line of a pipelines file into words as a shell does (spaces separate, 'single
/// quotes' keep everything, "double quotes" keep spaces with `\` escaping `"`, `\` and `$`,
/// `\` escapes outside quotes), with one rule of its own: `${NAME}` is replaced by the
/// environment's value **wherever it stands, inside single quotes too**, and `$$` writes one
/// `$`. So `-H 'Authorization: Bearer ${TOKEN}'`, as a shell user would quote a header, sends the
/// token, never the text `${TOKEN}`. A value is put into its word as it is: its spaces and quotes
/// never split or end the word. Anything else after a `$` (`$1` in a `--redact` template, `$`
/// ending a regex) is kept as written.
///
/// An unset or empty NAME, a `${` without its `}` and a name that is not `[A-Za-z_][A-Za-z0-9_]*`
/// are refused. ``Split/secrets`` lists the values put in, so an error line can show `${NAME}`
/// instead of a value (``hiding(_:in:)``: a secret is never echoed).
///
/// Thread safety: stateless.
enum ShellWords {
    /// Why a line cannot be split (without its line number; the file adds it).
    ///
    /// Thread safety: a value type.
    struct Problem: Error, Equatable {
        var message: String
    }

    /// The words of a line and the values `${NAME}` put into them.
    ///
    /// Thread safety: a value type.
    struct Split: Equatable {
        var words: [String]
        /// Each NAME used, with its value.
        var secrets: [Secret]
    }

    /// One `${NAME}` and the value it stood for.
    ///
    /// Thread safety: a value type.
    struct Secret: Equatable, Hashable {
        var name: String
        var value: String
    }

    static func split(_ text: String, environment: [String: String]) throws(Problem) -> Split {
        var words: [String] = []
        var secrets: [Secret] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var characters = Array(text)[...]
        while let character = characters.popFirst() {
            switch (quote, character) {
            case (_, "$") where characters.first == "$":
                characters.removeFirst()
                word.append("$")
                inWord = true
            case (_, "$") where characters.first == "{":
                characters.removeFirst()
                guard let close = characters.firstIndex(of: "}") else { throw Problem(message: "'${' without its '}' (write $$ for a $)") }
                let name = String(characters[..<close])
                characters = characters[(close + 1)...]
                guard isName(name) else { throw Problem(message: "'${\(name)}' is not ${NAME} with NAME of letters, digits and _ (write $$ for a $)") }
                guard let value = environment[name] else { throw Problem(message: "${\(name)} is not set in the environment") }
                guard !value.isEmpty else { throw Problem(message: "${\(name)} is empty in the environment") }
                word += value
                secrets.append(Secret(name: name, value: value))
                inWord = true
            case (nil, " "), (nil, "\t"):
                if inWord { words.append(word) }
                word = ""
                inWord = false
            case (nil, "'"), (nil, "\""):
                quote = character
                inWord = true
            case ("'", "'"), ("\"", "\""):
                quote = nil
            case (nil, "\\"), ("\"", "\\"):
                guard let next = characters.popFirst() else { throw Problem(message: "a '\\' ends the line") }
                if quote == "\"" && !["\"", "\\", "$"].contains(next) { word.append("\\") }
                word.append(next)
                inWord = true
            default:
                word.append(character)
                inWord = true
            }
        }
        if let quote { throw Problem(message: "a \(quote) quote is not closed") }
        if inWord { words.append(word) }
        return Split(words: words, secrets: secrets)
    }

    /// Whether `name` is an environment variable's name as a shell takes it.
    static func isName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }

    /// `text` with every value of `secrets` written as its `${NAME}` again (longest first, so a
    /// value inside another is not half replaced). Values of one or two characters stay: they
    /// are no secret, and replacing them would garble the line.
    static func hiding(_ secrets: [Secret], in text: String) -> String {
        var text = text
        for secret in Set(secrets).sorted(by: { $0.value.count > $1.value.count }) where secret.value.count >= 3 {
            text = text.replacingOccurrences(of: secret.value, with: "${\(secret.name)}")
        }
        return text
    }
}
