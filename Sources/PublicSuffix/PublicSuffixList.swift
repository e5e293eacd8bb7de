/// The Public Suffix List (https://publicsuffix.org/list/), parsed once into a trie of labels, and its algorithm.
///
/// The list's format: one rule a line, each line read up to its first whitespace; lines that start with `//` are
/// comments; a rule is labels joined by dots, where a label `*` matches any one label and a leading `!` makes an
/// exception. Comments `===BEGIN ICANN DOMAINS===` and `===BEGIN PRIVATE DOMAINS===` open the two sections.
/// Unicode rules are converted to their `xn--` form when loaded, since hosts arrive that way.
///
/// The algorithm (publicsuffix.org, "Formal algorithm"): the rules that match a name are those whose labels, right
/// to left, equal the name's or are `*`; if an exception rule matches it prevails, else the matching rule with the
/// most labels, else the default rule `*`. The public suffix is the name's last labels, as many as the
/// prevailing rule has (one fewer for an exception); the registrable domain is one label more, if the name has it.
///
/// Both sections count by default, as in browsers: the URL standard's host public suffix and registrable domain
/// run the list's algorithm over the whole list, and its own example gives `github.io`, a private entry, as the
/// public suffix of `github.io` (URL Standard §3.2 "Host miscellaneous"). `.icannOnly` leaves the private
/// section out, for callers that want the registries' view.
///
/// Lookups walk the trie from the rightmost label, trying the label itself and `*` at each level, so a lookup
/// costs one dictionary probe per label and per matching wildcard, however long the list.
public struct PublicSuffixList: Sendable {
    /// The two parts of the list.
    public enum Section: String, Hashable, Sendable, CaseIterable {
        /// Rules from the registries (`===BEGIN ICANN DOMAINS===`), and rules before any section marker.
        case icann
        /// Rules that domain owners asked for (`===BEGIN PRIVATE DOMAINS===`): `github.io`, `*.compute.amazonaws.com`.
        case `private`
    }

    /// Which sections a lookup uses.
    public enum Sections: Hashable, Sendable {
        /// Both, as browsers and the URL standard do.
        case all
        /// The ICANN section alone.
        case icannOnly
    }

    /// One rule of the list.
    public struct Rule: Hashable, Sendable, CustomStringConvertible {
        /// The labels, left to right, in ASCII (`xn--` for internationalised ones); `*` is a wildcard.
        public var labels: [String]
        /// Whether the rule began with `!`.
        public var isException: Bool
        /// The section the rule is in.
        public var section: Section
        /// The line of the file it came from, counting from 1.
        public var line: Int

        /// The rule as the list writes it, in ASCII.
        public var description: String { (isException ? "!" : "") + labels.joined(separator: ".") }
    }

    /// What the list says about one name.
    public struct Match: Hashable, Sendable {
        /// The name's public suffix: its last labels, as many as the prevailing rule says.
        public var publicSuffix: String
        /// The public suffix and the label before it; nil when the name is a public suffix itself.
        public var registrableDomain: String?
        /// The prevailing rule; nil for the default rule `*`, which applies when no rule matches.
        public var rule: Rule?
        /// The number of labels in the public suffix.
        public var suffixLabelCount: Int

        /// The rule as the list writes it, or `*` for the default rule.
        public var ruleDescription: String { rule?.description ?? "*" }
    }

    /// Every rule, in the order of the file.
    public let rules: [Rule]
    private let nodes: [Node]

    /// A node of the trie: one label of one or more rules, read right to left from the root.
    private struct Node: Sendable {
        var children: [Substring: Int32] = [:]
        var normal = Slot()
        var exception = Slot()
    }

    /// The rules that end at a node, one per section (the list could repeat a rule in both).
    private struct Slot: Sendable {
        var icann: Int32?
        var `private`: Int32?

        func rule(_ sections: Sections) -> Int32? {
            switch sections {
            case .all: icann ?? `private`
            case .icannOnly: icann
            }
        }

        mutating func set(_ index: Int32, section: Section) {
            switch section {
            case .icann: icann = icann ?? index
            case .private: `private` = `private` ?? index
            }
        }
    }

    /// Parses the list's UTF-8 bytes, as read from `public_suffix_list.dat`.
    ///
    /// Lines are read as bytes up to their first whitespace: most of the list is comments, and only a rule's own
    /// text becomes a `String`.
    public init(bytes: some Collection<UInt8>) throws(PublicSuffixListError) {
        let all = Array(bytes)
        if String(validating: all, as: UTF8.self) == nil {
            var number = 0
            for line in all.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                number += 1
                if String(validating: line, as: UTF8.self) == nil {
                    throw PublicSuffixListError(.notUTF8, line: number, "line \(number) is not UTF-8")
                }
            }
        }
        var rules: [Rule] = []
        var section = Section.icann
        var number = 0
        for line in all.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            var rest = line[...]
            if number == 1, rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
            let token = rest.prefix { !Self.isWhitespace($0) }
            if token.isEmpty { continue }
            if token.starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) {
                // Only the section markers matter among the comments, and each holds "===".
                guard rest.contains(UInt8(ascii: "=")) else { continue }
                let comment = String(decoding: rest, as: UTF8.self)
                if comment.contains("===BEGIN PRIVATE DOMAINS===") {
                    section = .private
                } else if comment.contains("===BEGIN ICANN DOMAINS===") || comment.contains("===END PRIVATE DOMAINS===")
                {
                    section = .icann
                }
                continue
            }
            rules.append(
                try Self.rule(Substring(String(decoding: token, as: UTF8.self)), section: section, line: number))
        }
        guard !rules.isEmpty else {
            throw PublicSuffixListError(.noRules, line: nil, "the list has no rules: it is not a public suffix list")
        }
        var nodes = [Node()]
        for (index, rule) in rules.enumerated() {
            var node = 0
            for label in rule.labels.reversed() {
                if let child = nodes[node].children[Substring(label)] {
                    node = Int(child)
                } else {
                    nodes.append(Node())
                    nodes[node].children[Substring(label)] = Int32(nodes.count - 1)
                    node = nodes.count - 1
                }
            }
            if rule.isException {
                nodes[node].exception.set(Int32(index), section: rule.section)
            } else {
                nodes[node].normal.set(Int32(index), section: rule.section)
            }
        }
        self.rules = rules
        self.nodes = nodes
    }

    /// Parses the list's text. Lines end at LF; a CR before it is whitespace, so CRLF files read the same.
    public init(text: some StringProtocol) throws(PublicSuffixListError) {
        try self.init(bytes: Array(text.utf8))
    }

    /// A lowercase letter, a digit or a hyphen: the ASCII a rule's label may hold.
    private static func isLabelByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || byte == UInt8(ascii: "-")
    }

    /// The list's whitespace: a line is read up to the first of these (space, tab, CR, VT, FF).
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0B || byte == 0x0C
    }

    /// One rule from its text, or the reason the line is not one.
    private static func rule(_ token: Substring, section: Section, line: Int) throws(PublicSuffixListError) -> Rule {
        func bad(_ reason: String) -> PublicSuffixListError {
            PublicSuffixListError(
                .badRule, line: line, "line \(line): \(String(token.prefix(80)).debugDescription) \(reason)")
        }
        var text = token
        let isException = text.hasPrefix("!")
        if isException { text = text.dropFirst() }
        if text.hasPrefix(".") { text = text.dropFirst() }  // "A leading dot is optional" (the format's first text)
        guard !text.isEmpty else { throw bad("has no labels") }
        var labels: [String] = []
        var length = -1  // the dots between labels: one fewer than the labels
        func append(_ label: String) throws(PublicSuffixListError) {
            // Checked as labels come, so a hostile line costs no more than its first 253 characters.
            length += 1 + label.utf8.count
            guard length <= DomainName.maximumLength else {
                throw bad("is longer than \(DomainName.maximumLength) characters")
            }
            labels.append(label)
        }
        for labelBytes in text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard !labelBytes.isEmpty else { throw bad("has an empty label") }
            if labelBytes.elementsEqual(CollectionOfOne(UInt8(ascii: "*"))) {
                try append("*")
                continue
            }
            guard !labelBytes.contains(UInt8(ascii: "*")) else {
                throw bad("has * inside a label: a wildcard must be a whole label")
            }
            if labelBytes.allSatisfy({ $0 < 0x80 }) {
                // Nearly every rule: its bytes are its characters, already what Punycode would give.
                guard labelBytes.count <= DomainName.maximumLabelLength else {
                    throw bad("has a label longer than \(DomainName.maximumLabelLength) characters")
                }
                var lowered: [UInt8] = []
                lowered.reserveCapacity(labelBytes.count)
                for byte in labelBytes {
                    let lower = byte.asciiLowercased
                    guard Self.isLabelByte(lower) else {
                        throw bad("has a character that is not a letter, digit or hyphen")
                    }
                    lowered.append(lower)
                }
                try append(String(decoding: lowered, as: UTF8.self))
                continue
            }
            let label = Substring(labelBytes)
            guard label.unicodeScalars.count <= DomainName.maximumLabelLength else {
                throw bad("has a label longer than \(DomainName.maximumLabelLength) characters")
            }
            for scalar in label.unicodeScalars where scalar.isASCII {
                guard Self.isLabelByte(UInt8(ascii: scalar).asciiLowercased) else {
                    throw bad("has a character that is not a letter, digit or hyphen")
                }
            }
            let ascii: String
            do {
                ascii = try Punycode.asciiLabel(label)
            } catch {
                throw bad("cannot be written in Punycode: \(error)")
            }
            guard ascii.utf8.count <= DomainName.maximumLabelLength else {
                throw bad("has a label longer than \(DomainName.maximumLabelLength) characters in Punycode")
            }
            try append(ascii)
        }
        guard !isException || labels.count >= 2 else {
            throw bad("is an exception of one label: it would leave no public suffix")
        }
        return Rule(labels: labels, isException: isException, section: section, line: line)
    }

    /// The public suffix, registrable domain and prevailing rule of `name`.
    public func match(_ name: DomainName, sections: Sections = .all) -> Match {
        let labels = name.labels
        var normal: (depth: Int, rule: Int32)?
        var exception: (depth: Int, rule: Int32)?
        // Depth-first over the trie. Each node is reached by one path, so a lookup visits at most as many nodes
        // as the labels and wildcards that match, and never more than the trie holds.
        var pending: [(node: Int32, depth: Int)] = [(0, 0)]
        while let (index, depth) = pending.popLast() {
            let node = nodes[Int(index)]
            if let rule = node.normal.rule(sections), depth > normal?.depth ?? 0 { normal = (depth, rule) }
            if let rule = node.exception.rule(sections), depth > exception?.depth ?? 0 { exception = (depth, rule) }
            guard depth < labels.count else { continue }
            if let wildcard = node.children["*"] { pending.append((wildcard, depth + 1)) }
            // Pushed last, so popped first: at equal depth the exact rule is the one reported.
            if let exact = node.children[labels[labels.count - 1 - depth]] { pending.append((exact, depth + 1)) }
        }
        let count: Int
        let rule: Int32?
        if let exception {
            (count, rule) = (exception.depth - 1, exception.rule)
        } else if let normal {
            (count, rule) = (normal.depth, normal.rule)
        } else {
            (count, rule) = (1, nil)
        }
        return Match(
            publicSuffix: String(name.suffix(labels: count)),
            registrableDomain: count < labels.count ? String(name.suffix(labels: count + 1)) : nil,
            rule: rule.map { rules[Int($0)] }, suffixLabelCount: count)
    }

    /// The public suffix of `host`.
    public func publicSuffix(of host: String, sections: Sections = .all) throws(DomainNameError) -> String {
        match(try DomainName(host), sections: sections).publicSuffix
    }

    /// The registrable domain of `host`: nil when `host` is a public suffix itself.
    public func registrableDomain(of host: String, sections: Sections = .all) throws(DomainNameError) -> String? {
        match(try DomainName(host), sections: sections).registrableDomain
    }
}

/// Why a list could not be parsed. `code` is stable; `description` names the line and the reason.
public struct PublicSuffixListError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable identifier for each kind of failure.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// A line is not UTF-8.
        case notUTF8
        /// A line is not a rule: an empty label, a wildcard inside a label, a character no host has, too long.
        case badRule
        /// Nothing in the text is a rule.
        case noRules
    }

    /// The kind of failure.
    public var code: Code
    /// The line it is on, counting from 1, when it is on one.
    public var line: Int?
    /// One line for people.
    public var description: String

    public init(_ code: Code, line: Int?, _ description: String) {
        self.code = code
        self.line = line
        self.description = description
    }
}
