/// Splits a line into words as a shell does: spaces separate, 'single quotes' keep everything,
/// "double quotes" keep spaces (`\` escapes `"`, `\`, `$` there), `\` escapes outside quotes,
/// and `${NAME}` is the environment's value (outside single quotes).
///
/// Thread safety: stateless.
enum ShellWords {
    struct Problem: Error {
        var message: String
    }

    static func split(_ text: String, environment: [String: String]) throws(Problem) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var characters = Array(text)[...]
        while let character = characters.popFirst() {
            switch (quote, character) {
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
            case (nil, "$"), ("\"", "$"):
                guard characters.first == "{" else {
                    word.append("$")
                    inWord = true
                    continue
                }
                characters.removeFirst()
                guard let close = characters.firstIndex(of: "}") else { throw Problem(message: "'${' without its '}'") }
                let name = String(characters[..<close])
                characters = characters[(close + 1)...]
                guard let value = environment[name] else { throw Problem(message: "${\(name)} is not set in the environment") }
                word += value
                inWord = true
            default:
                word.append(character)
                inWord = true
            }
        }
        if let quote { throw Problem(message: "a \(quote) quote is not closed") }
        if inWord { words.append(word) }
        return words
    }
}
