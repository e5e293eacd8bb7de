/// A page's Smart App Banner: the `<meta name="apple-itunes-app" content="app-id=…, app-argument=…,
/// affiliate-data=…">` tag Safari reads to offer the App Store app (WWDC 2015 session 509; Apple, "Promoting Apps
/// with Smart App Banners",
/// https://developer.apple.com/documentation/webkit/promoting-apps-with-smart-app-banners).
///
/// Reading is tolerant the way browsers read HTML: the tag and attribute names in any case, attributes in any
/// order, quoted with `"` or `'` or unquoted, character references (`&amp;`, `&#38;`, `&#x26;`) decoded, comments,
/// `<script>` and `<style>` skipped. The first `apple-itunes-app` tag wins. In `content`, items are `key=value`
/// separated by commas; a comma that is not followed by `key=` belongs to the value (an `app-argument` URL may
/// hold commas).
public struct SmartAppBanner: Hashable, Sendable {
    /// `app-id`: the App Store ID, all digits.
    public var appID: String
    /// `app-argument`: the URL Safari hands the app when it opens.
    public var appArgument: String?
    /// `affiliate-data`: the App Store affiliate string.
    public var affiliateData: String?
    /// Keys other than these three, in order, which Safari ignores.
    public var unknownKeys: [String]
    /// How many `apple-itunes-app` tags the page has; only the first counts.
    public var tagCount: Int

    /// The largest page read: 4 MiB.
    public static let maximumBytes = 4 << 20

    /// Finds and reads the banner tag in `html`.
    public init(html: [UInt8]) throws(AssociationFileError) {
        guard html.count <= Self.maximumBytes else {
            throw AssociationFileError(
                .tooLarge, "the page is \(html.count) bytes, above the limit of \(Self.maximumBytes) bytes")
        }
        let contents = HTMLMetaScanner(html).metaContents(named: "apple-itunes-app")
        guard let content = contents.first else {
            throw AssociationFileError(.noBanner, "the page has no <meta name=\"apple-itunes-app\"> tag")
        }
        tagCount = contents.count
        var appID: String?
        unknownKeys = []
        for (key, value) in Self.items(content) {
            switch key.lowercased() {
            case "app-id": if appID == nil { appID = value }
            case "app-argument": if appArgument == nil { appArgument = value }
            case "affiliate-data": if affiliateData == nil { affiliateData = value }
            default: unknownKeys.append(key)
            }
        }
        guard let appID, !appID.isEmpty else {
            throw AssociationFileError(
                .invalidBanner, "the apple-itunes-app tag's content \"\(content.printable)\" has no app-id")
        }
        guard appID.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            throw AssociationFileError(
                .invalidBanner,
                "the app-id \"\(appID.printable)\" is not all digits (the App Store ID, such as 640199958)")
        }
        self.appID = appID
    }

    /// `key=value` items separated by commas; a comma belongs to the value unless `key=` follows it.
    static func items(_ content: String) -> [(key: String, value: String)] {
        var result: [(key: String, value: String)] = []
        var segments: [Substring] = []
        for part in content.split(separator: ",", omittingEmptySubsequences: false) {
            if segments.isEmpty || startsWithKey(part) {
                segments.append(part)
            } else {
                segments[segments.count - 1] = content[segments[segments.count - 1].startIndex..<part.endIndex]
            }
        }
        for segment in segments {
            let trimmed = segment.trimmingSpaces
            guard !trimmed.isEmpty else { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                result.append((String(trimmed), ""))
                continue
            }
            result.append(
                (
                    String(trimmed[..<equals].trimmingSpaces),
                    String(trimmed[trimmed.index(after: equals)...].trimmingSpaces)
                ))
        }
        return result
    }

    private static func startsWithKey(_ part: Substring) -> Bool {
        let trimmed = part.trimmingSpaces
        guard let equals = trimmed.firstIndex(of: "=") else { return false }
        let key = trimmed[..<equals].trimmingSpaces
        return !key.isEmpty
            && key.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first.isWhitespace { text = text.dropFirst() }
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        return text
    }
}

/// Finds `<meta>` tags in HTML the way the HTML tokenizer would for well-formed pages (WHATWG HTML §13.2.5):
/// tag and attribute names are ASCII case-insensitive; values quoted with `"` or `'`, or unquoted up to
/// whitespace or `>`; comments and the raw text of `<script>`, `<style>`, `<textarea>` and `<title>` skipped; the
/// first of two attributes with the same name counts.
struct HTMLMetaScanner {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The `content` of every `<meta name=NAME>` tag, in order (NAME compared case-insensitively).
    func metaContents(named wanted: String) -> [String] {
        var scanner = self
        var result: [String] = []
        while let (name, attributes) = scanner.nextTag() {
            guard name == "meta" else { continue }
            guard let metaName = attributes.first(where: { $0.name == "name" })?.value,
                metaName.trimmedSpaces().lowercased() == wanted
            else { continue }
            result.append(attributes.first(where: { $0.name == "content" })?.value ?? "")
        }
        return result
    }

    private var current: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    private func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D
    }

    private func startsWith(_ text: String, at position: Int) -> Bool {
        let needle = Array(text.utf8)
        guard bytes.count - position >= needle.count else { return false }
        for (index, byte) in needle.enumerated() where lower(bytes[position + index]) != byte { return false }
        return true
    }

    private func lower(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 0x20 : byte
    }

    /// Moves past `text` (case-insensitive) or to the end.
    private mutating func skip(past text: String) {
        while offset < bytes.count {
            if startsWith(text, at: offset) {
                offset += text.utf8.count
                return
            }
            offset += 1
        }
    }

    /// The next start tag's lower-cased name and attributes, skipping text, end tags, comments and raw text.
    mutating func nextTag() -> (String, [(name: String, value: String)])? {
        while offset < bytes.count {
            guard bytes[offset] == UInt8(ascii: "<") else {
                offset += 1
                continue
            }
            if startsWith("<!--", at: offset) {
                offset += 4
                skip(past: "-->")
                continue
            }
            offset += 1
            guard let first = current else { return nil }
            let isLetter = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(lower(first))
            guard isLetter else {
                // `</…>`, `<!DOCTYPE…>`, `<?…>`: skip to the next `>`.
                if first == UInt8(ascii: "/") || first == UInt8(ascii: "!") || first == UInt8(ascii: "?") {
                    skip(past: ">")
                }
                continue
            }
            var name: [UInt8] = []
            while let byte = current, !isSpace(byte), byte != UInt8(ascii: "/"), byte != UInt8(ascii: ">") {
                name.append(lower(byte))
                offset += 1
            }
            // A tag cut off by the end of the text is dropped, as the tokenizer drops it ("eof-in-tag").
            guard let attributes = readAttributes() else { return nil }
            let tagName = String(decoding: name, as: UTF8.self)
            if ["script", "style", "textarea", "title"].contains(tagName) { skip(past: "</\(tagName)") }
            return (tagName, attributes)
        }
        return nil
    }

    private mutating func readAttributes() -> [(name: String, value: String)]? {
        var attributes: [(name: String, value: String)] = []
        while true {
            while let byte = current, isSpace(byte) || byte == UInt8(ascii: "/") { offset += 1 }
            guard let byte = current else { return nil }
            if byte == UInt8(ascii: ">") {
                offset += 1
                return attributes
            }
            var name: [UInt8] = [lower(byte)]
            offset += 1
            while let byte = current, !isSpace(byte), byte != UInt8(ascii: "/"), byte != UInt8(ascii: ">"),
                byte != UInt8(ascii: "=")
            {
                name.append(lower(byte))
                offset += 1
            }
            while let byte = current, isSpace(byte) { offset += 1 }
            var value: [UInt8] = []
            if current == UInt8(ascii: "=") {
                offset += 1
                while let byte = current, isSpace(byte) { offset += 1 }
                if let quote = current, quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
                    offset += 1
                    while let byte = current, byte != quote {
                        value.append(byte)
                        offset += 1
                    }
                    if current != nil { offset += 1 }
                } else {
                    while let byte = current, !isSpace(byte), byte != UInt8(ascii: ">") {
                        value.append(byte)
                        offset += 1
                    }
                }
            }
            let attributeName = String(decoding: name, as: UTF8.self)
            if !attributes.contains(where: { $0.name == attributeName }) {
                attributes.append((attributeName, HTMLCharacterReferences.decode(value)))
            }
        }
    }
}

/// Decodes the character references a `content` attribute is likely to hold: numeric ones and the named
/// `&amp; &lt; &gt; &quot; &apos; &nbsp;`. Others stay as written.
enum HTMLCharacterReferences {
    static func decode(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("&") else { return text }
        var result = ""
        var rest = Substring(text)
        while let ampersand = rest.firstIndex(of: "&") {
            result += rest[..<ampersand]
            rest = rest[ampersand...]
            guard let semicolon = rest.prefix(12).firstIndex(of: ";") else {
                result += "&"
                rest = rest.dropFirst()
                continue
            }
            let name = rest[rest.index(after: rest.startIndex)..<semicolon]
            if let scalar = scalar(name) {
                result.unicodeScalars.append(scalar)
                rest = rest[rest.index(after: semicolon)...]
            } else {
                result += "&"
                rest = rest.dropFirst()
            }
        }
        return result + rest
    }

    private static func scalar(_ name: Substring) -> Unicode.Scalar? {
        switch name {
        case "amp": return "&"
        case "lt": return "<"
        case "gt": return ">"
        case "quot": return "\""
        case "apos": return "'"
        case "nbsp": return "\u{A0}"
        default: break
        }
        guard name.hasPrefix("#") else { return nil }
        let digits = name.dropFirst()
        let value: UInt32?
        if digits.hasPrefix("x") || digits.hasPrefix("X") {
            let hex = digits.dropFirst()
            value = !hex.isEmpty && hex.utf8.allSatisfy(\.isASCIIHex) ? UInt32(hex, radix: 16) : nil
        } else {
            value = !digits.isEmpty && digits.utf8.allSatisfy { (0x30...0x39).contains($0) } ? UInt32(digits) : nil
        }
        guard let value, value != 0 else { return nil }
        return Unicode.Scalar(value)
    }
}

extension String {
    func trimmedSpaces() -> String { String(Substring(self).trimmingSpaces) }
}
