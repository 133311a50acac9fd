/// A Markdown table: a heading row, right-aligned value columns, and cell formatting shared by
/// every table of the report (`median (min–max)`, ratios of medians).
///
/// Thread safety: a value type.
struct MarkdownTable {
    let headings: [String]
    private(set) var rows: [[String]] = []

    init(_ headings: [String]) {
        self.headings = headings
    }

    mutating func add(_ row: [String]) {
        rows.append(row)
    }

    var lines: [String] {
        ["| " + headings.joined(separator: " | ") + " |", "|---|" + String(repeating: "---:|", count: headings.count - 1)]
            + rows.map { "| " + $0.joined(separator: " | ") + " |" }
    }

    /// `median (min–max)`, or `—` without values.
    static func cell(_ values: [Double], digits: Int) -> String {
        Report.cell(Summary(values), digits: digits)
    }

    /// `a / b` of the medians as `0.93×`, or `—` when either has no value.
    static func ratio(_ a: [Double], _ b: [Double]) -> String {
        guard let a = Summary(a), let b = Summary(b), b.median > 0 else { return "—" }
        return String(format: "%.2f×", a.median / b.median)
    }
}
