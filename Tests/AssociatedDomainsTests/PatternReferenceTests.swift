import AssociatedDomains
import Testing

/// The matcher against a plain backtracking one, over every short pattern and path of a small alphabet: the
/// reference expands `$(v)` into each value's characters and tries them all.
struct PatternReferenceTests {
    static let values = ["a", "b*", "?a"]

    /// Whether `text` matches `pattern` (tokens: a character, `*`, `?`, or `V` for `$(v)`).
    static func reference(_ pattern: Substring, _ text: Substring) -> Bool {
        guard let first = pattern.first else { return text.isEmpty }
        let rest = pattern.dropFirst()
        switch first {
        case "*":
            var suffix = text
            while true {
                if reference(rest, suffix) { return true }
                if suffix.isEmpty { return false }
                suffix = suffix.dropFirst()
            }
        case "?": return !text.isEmpty && reference(rest, text.dropFirst())
        case "V": return values.contains { reference(Substring($0) + rest, text) }
        default: return text.first == first && reference(rest, text.dropFirst())
        }
    }

    static func strings(_ alphabet: [String], upTo length: Int) -> [String] {
        var all = [""]
        var layer = [""]
        for _ in 0..<length {
            layer = layer.flatMap { prefix in alphabet.map { prefix + $0 } }
            all += layer
        }
        return all
    }

    @Test func everyShortPatternAgreesWithTheReference() throws {
        let app = try AppID("ABCDE12345.com.example.app")
        let paths = Self.strings(["a", "b"], upTo: 5)
        var compared = 0
        for pattern in Self.strings(["a", "b", "*", "?", "V"], upTo: 4) {
            let written = pattern.replacing("V", with: "$(v)")
            let file = """
                {"applinks": {"substitutionVariables": {"v": ["a", "b*", "?a"]},
                 "details": [{"appIDs": ["\(app)"], "components": [{"/": "/\(written)"}]}]}}
                """
            let association = try AppSiteAssociation(json: Array(file.utf8))
            for path in paths {
                let opens = association.match(url: "https://example.com/" + path, app: app).outcome == .open
                #expect(opens == Self.reference(Substring(pattern), Substring(path)), "\(written) vs /\(path)")
                compared += 1
            }
        }
        #expect(compared == 781 * 63)
    }
}
