/// Reads a body's text one character at a time, with the byte offset just past it; for HTML,
/// skips markup and decodes entities.
///
/// Thread safety: a value type, used by one caller.
package struct BodyText {
    private let characters: [(character: Character, end: Int)]
    private let isHTML: Bool
    private var index = 0
    /// For ``nextOnOneLine()``: whether a word was read, and a word's first character read
    /// past the space before it.
    private var readAWord = false
    private var held: (Character, Int)?

    package init(_ body: [UInt8], isHTML: Bool) {
        var characters: [(Character, Int)] = []
        var offset = 0
        for character in String(decoding: body, as: UTF8.self) {
            // U+FFFD stands for one invalid byte; every other character for its UTF-8 length.
            offset += character == "\u{FFFD}" ? 1 : character.utf8.count
            characters.append((character, min(offset, body.count)))
        }
        self.characters = characters
        self.isHTML = isHTML
    }

    /// The next character as one line reads: each run of whitespace or control characters
    /// between words is one space (with the run's end offset); none before the first word or
    /// after the last.
    /// `text` as one clean line, as ``nextOnOneLine()`` reads it: each run of whitespace or
    /// control characters (a terminal escape's ESC, line breaks) is one space, none at the ends.
    package static func oneLine(_ text: String) -> String {
        var reader = BodyText(Array(text.utf8), isHTML: false)
        var line = ""
        while let (character, _) = reader.nextOnOneLine() { line.append(character) }
        return line
    }

    package mutating func nextOnOneLine() -> (Character, Int)? {
        if let held {
            self.held = nil
            return held
        }
        var space: Int?
        while let (character, end) = next() {
            if character.isWhitespace || character.unicodeScalars.allSatisfy({ $0.properties.generalCategory == .control }) {
                if readAWord { space = end }
                continue
            }
            readAWord = true
            guard let space else { return (character, end) }
            held = (character, end)
            return (" ", space)
        }
        return nil
    }

    package mutating func next() -> (Character, Int)? {
        while index < characters.count {
            let (character, end) = characters[index]
            guard isHTML else {
                index += 1
                return (character, end)
            }
            if character == "<" {
                skipMarkup()
                // Markup separates words ("<td>a</td><td>b</td>" reads "a b").
                return (" ", characters[index - 1].end)
            }
            if character == "&", let (decoded, length) = entity(at: index) {
                index += length
                return (decoded, characters[index - 1].end)
            }
            index += 1
            return (character, end)
        }
        return nil
    }

    /// Skips the tag at `index`; a comment, or a head, script or style element, whole.
    private mutating func skipMarkup() {
        if starts(with: "<!--") {
            skip(past: "-->")
            return
        }
        for element in ["head", "script", "style"] where starts(with: "<" + element) {
            let after = index + element.count + 1
            if after >= characters.count || [">", " ", "\t", "\n", "\r", "/"].contains(characters[after].character) {
                skip(past: "</\(element)")
                skip(past: ">")
                return
            }
        }
        skip(past: ">")
    }

    private func starts(with text: String) -> Bool {
        let wanted = Array(text)
        guard index + wanted.count <= characters.count else { return false }
        return (0..<wanted.count).allSatisfy { String(characters[index + $0].character).lowercased() == String(wanted[$0]) }
    }

    /// Moves past the next occurrence of `text` (case-insensitive), or to the end.
    private mutating func skip(past text: String) {
        let length = text.count
        while index < characters.count {
            if starts(with: text) {
                index += length
                return
            }
            index += 1
        }
    }

    /// `&amp;`, `&lt;`, `&#39;`, `&#x27;`… at `start`: the character and the entity's length.
    private func entity(at start: Int) -> (Character, Int)? {
        guard let semicolon = (start + 1..<min(start + 12, characters.count)).first(where: { characters[$0].character == ";" }) else {
            return nil
        }
        let name = String(characters[(start + 1)..<semicolon].map(\.character))
        let named: [String: Character] = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": " "]
        let decoded: Character?
        if let character = named[name] {
            decoded = character
        } else if name.hasPrefix("#x") || name.hasPrefix("#X") {
            decoded = UInt32(name.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init).map(Character.init)
        } else if name.hasPrefix("#") {
            decoded = UInt32(name.dropFirst()).flatMap(Unicode.Scalar.init).map(Character.init)
        } else {
            decoded = nil
        }
        return decoded.map { ($0, semicolon - start + 1) }
    }
}
