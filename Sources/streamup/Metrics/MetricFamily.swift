/// One metric family as the Prometheus text format (version 0.0.4) shows it: its name, type,
/// help and samples, each sample with its labels. Metrics are kept as families and rendered
/// once (``render(_:)``); `streamup run` adds each pipeline's `pipeline` label to its families
/// and merges them by name (``merged(_:)``), never by reading text back.
///
/// Thread safety: a value type.
struct MetricFamily: Equatable {
    /// The family's `# TYPE`.
    ///
    /// Thread safety: a value type.
    enum Kind: String {
        case counter, gauge, histogram
    }

    /// One sample: the name's suffix (`_bucket`, `_sum`, `_count` in a histogram), its labels in
    /// order, and its value as written.
    ///
    /// Thread safety: a value type.
    struct Sample: Equatable {
        var suffix = ""
        var labels: [Label] = []
        var value: String
    }

    /// One label of a sample.
    ///
    /// Thread safety: a value type.
    struct Label: Equatable {
        var name: String
        var value: String
    }

    var name: String
    var kind: Kind
    var help: String
    var samples: [Sample]

    /// A counter with one sample.
    static func counter(_ name: String, _ help: String, _ value: Int) -> MetricFamily {
        MetricFamily(name: name, kind: .counter, help: help, samples: [Sample(value: "\(value)")])
    }

    /// A gauge with one sample.
    static func gauge(_ name: String, _ help: String, _ value: String, labels: [Label] = []) -> MetricFamily {
        MetricFamily(name: name, kind: .gauge, help: help, samples: [Sample(labels: labels, value: value)])
    }

    /// The same family with `label` first on every sample.
    func labelled(_ label: Label) -> MetricFamily {
        var family = self
        family.samples = samples.map { sample in
            var sample = sample
            sample.labels.insert(label, at: 0)
            return sample
        }
        return family
    }

    /// Families of several sources as one list: each name once (the first source's help and
    /// type), the samples of every source under it, in the order the names first appeared.
    static func merged(_ lists: [[MetricFamily]]) -> [MetricFamily] {
        var order: [String] = []
        var byName: [String: MetricFamily] = [:]
        for family in lists.joined() {
            if byName[family.name] == nil {
                order.append(family.name)
                byName[family.name] = family
            } else {
                byName[family.name]?.samples += family.samples
            }
        }
        return order.compactMap { byName[$0] }
    }

    /// The families in the text format: `# HELP`, `# TYPE`, then one line per sample.
    static func render(_ families: [MetricFamily]) -> String {
        var text = ""
        for family in families {
            text += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.kind.rawValue)\n"
            for sample in family.samples {
                let labels = sample.labels.map { "\($0.name)=\"\(escaped($0.value))\"" }.joined(separator: ",")
                text += "\(family.name)\(sample.suffix)\(labels.isEmpty ? "" : "{\(labels)}") \(sample.value)\n"
            }
        }
        return text
    }

    /// A label value: backslash, double quote and newline escaped.
    static func escaped(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
