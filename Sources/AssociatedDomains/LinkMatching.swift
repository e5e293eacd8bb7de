/// What the system does with a tapped `https` link, given a domain's association file and an installed app.
public struct LinkVerdict: Hashable, Sendable, CustomStringConvertible {
    public enum Outcome: String, Hashable, Sendable {
        /// The app opens the link (a universal link).
        case open
        /// A rule excludes the link (`NOT ` or `"exclude": true`): it opens in the browser, and matching stopped.
        case excluded
        /// No rule names the link for this app, or the link cannot be a universal link: it opens in the browser.
        case browser
    }

    public var outcome: Outcome
    /// The rule that decided, nil when none matched (or the URL was refused before any rule was read).
    public var rule: LinkRule?
    /// One sentence for people: why this outcome.
    public var reason: String

    public var description: String { "\(outcome.rawValue): \(reason)" }
}

/// The rule of an association file that decided a link.
public struct LinkRule: Hashable, Sendable, CustomStringConvertible {
    /// The shape the rule is written in.
    public var form: AppLinksForm
    /// The JSON path of the rule: `applinks.details[0].paths[2]`, `applinks.details[1].components[0]`.
    public var location: String
    /// The detail's position in `applinks.details`.
    public var detail: Int
    /// The rule's position in the detail's `paths` or `components`.
    public var index: Int
    /// The rule as written: the path string (with any `NOT `), or the component as one line of JSON.
    public var pattern: String

    public var description: String { "\(location) \(pattern) (\(form))" }
}

/// The parts of an `https` URL that universal links look at, as written (still percent-encoded).
public struct LinkURL: Hashable, Sendable {
    /// The host, lower-cased, without a trailing dot.
    public var host: String
    /// The port when one is written and is not 443.
    public var port: Int?
    /// The path, `/` when empty.
    public var path: String
    /// The query without `?`, nil when there is none.
    public var query: String?
    /// The fragment without `#`, nil when there is none.
    public var fragment: String?

    /// The longest link read.
    public static let maximumBytes = 4096

    /// Splits `text` (RFC 3986 §3): `https://[userinfo@]host[:port][/path][?query][#fragment]`. Only `https`
    /// URLs can be universal links.
    public init(_ text: String) throws(AssociationFileError) {
        var rest = Substring(text)
        guard rest.utf8.count <= Self.maximumBytes else {
            throw AssociationFileError(.tooLarge, "the URL is longer than \(Self.maximumBytes) bytes")
        }
        guard let colon = rest.firstIndex(of: ":"), rest[..<colon].lowercased() == "https",
            rest[colon...].hasPrefix("://")
        else {
            throw AssociationFileError(
                .wrongType, "\"\(text.printable)\" is not an https:// URL (only https links are universal links)")
        }
        guard !rest.unicodeScalars.contains(where: { $0.value <= 0x20 || $0 == "\\" }) else {
            throw AssociationFileError(.wrongType, "the URL has a space, control character or backslash in it")
        }
        rest = rest[rest.index(colon, offsetBy: 3)...]
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        if let mark = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        path = rest[slash...].isEmpty ? "/" : String(rest[slash...])
        var authority = rest[..<slash]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var hostText = authority
        var portText: Substring? = nil
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw AssociationFileError(.wrongType, "the URL's IPv6 host has no closing ]")
            }
            hostText = authority[...close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else if !after.isEmpty {
                throw AssociationFileError(.wrongType, "the URL has text after its IPv6 host")
            }
        } else if let portColon = authority.lastIndex(of: ":") {
            hostText = authority[..<portColon]
            portText = authority[authority.index(after: portColon)...]
        }
        if hostText.hasSuffix(".") { hostText = hostText.dropLast() }
        guard !hostText.isEmpty else { throw AssociationFileError(.wrongType, "the URL has no host") }
        host = hostText.lowercased()
        if let portText, !portText.isEmpty {
            guard portText.count <= 5, let number = Int(portText), (0...65535).contains(number) else {
                throw AssociationFileError(.wrongType, "the URL's port \"\(portText.printable)\" is not a number")
            }
            port = number == 443 ? nil : number
        }
    }

    /// `host` or `host:port`.
    public var authority: String { port.map { "\(host):\($0)" } ?? host }
}

extension AppSiteAssociation {
    /// What happens to `url` for `app` when this file is the one served by `domain` (`host` or `host:port`; nil
    /// means the URL's own host, so the host check passes).
    ///
    /// The host must be the file's domain exactly: the file of `example.com` says nothing about
    /// `www.example.com` (WWDC 2015 session 509: "One file for each domain"). Then each detail that names the app
    /// is read in file order, and within it each rule in order; the first rule that matches decides:
    /// - 2015 dictionary: a path is exact, or ends in `*` for "this prefix"; `*` alone matches every path. The
    ///   comparison is case-sensitive and uses the path alone (query and fragment are ignored).
    /// - iOS 9 `paths`: `*` matches any run of characters and `?` one character; a path starting with `NOT `
    ///   excludes what it matches. Apple: "only the path component of the URL is used for comparison. Other
    ///   components, such as the query string or fragment identifier, are ignored."
    /// - iOS 13 `components`: `/`, `?` and `#` must all match (an absent one matches anything; an absent query or
    ///   fragment reads as the empty string). A `?` dictionary requires every named item to match, and "URLs may
    ///   repeat query item names and the operating system will require that all instances of a given query item
    ///   name match your pattern"; "query items with no value and absent query items are treated … as if they
    ///   have a value equal to the empty string" (WWDC 2019 session 717). `caseSensitive: false` folds case;
    ///   `percentEncoded: false` means the patterns are written decoded, so the URL's parts are percent-decoded
    ///   before comparing. The component's own setting wins over its detail's `defaults`, which win over
    ///   `applinks.defaults`; both default to true.
    public func match(url text: String, app: AppID, domain: String? = nil) -> LinkVerdict {
        let url: LinkURL
        do { url = try LinkURL(text) } catch {
            return LinkVerdict(outcome: .browser, rule: nil, reason: error.message)
        }
        if let domain {
            let expected = Self.normalizedDomain(domain)
            guard url.authority == expected else {
                return LinkVerdict(
                    outcome: .browser, rule: nil,
                    reason: "the link's host \(url.authority) is not \(expected), the domain this file came from "
                        + "(each host needs its own file and entitlement)")
            }
        }
        guard let applinks else {
            return LinkVerdict(outcome: .browser, rule: nil, reason: "the file has no applinks section")
        }
        let wanted = app.description
        let details = applinks.details.filter { $0.appIDs.contains(wanted) }
        guard !details.isEmpty else {
            return LinkVerdict(
                outcome: .browser, rule: nil,
                reason: reasonNotNamed(app: app, for: .applinks) ?? "no applinks detail names \(wanted)")
        }
        for detail in details {
            if let verdict = detail.decide(url, applinks: applinks) { return verdict }
        }
        return LinkVerdict(
            outcome: .browser, rule: nil,
            reason: "no rule for \(wanted) matches \(url.path.printable)"
                + (details.count > 1 ? " in its \(details.count) details" : ""))
    }

    static func normalizedDomain(_ domain: String) -> String {
        var text = Substring(domain.lowercased())
        var port = ""
        if let colon = text.lastIndex(of: ":"), !text.hasSuffix("]"), Int(text[text.index(after: colon)...]) != nil {
            port = text[text.index(after: colon)...] == "443" ? "" : String(text[colon...])
            text = text[..<colon]
        }
        if text.hasSuffix(".") { text = text.dropLast() }
        return String(text) + port
    }
}

extension AppLinkDetail {
    /// The verdict of the first of this detail's rules that matches, nil when none does.
    func decide(_ url: LinkURL, applinks: AppLinks) -> LinkVerdict? {
        switch form {
        case .dictionary2015:
            for (index, pattern) in paths.enumerated() where Self.match2015(pattern, url.path) {
                return verdict(.open, index: index, pattern: pattern, "\(url.path.printable) matches \"\(pattern)\"")
            }
        case .paths:
            let path = LinkSubject(LinkPattern.subject(url.path, caseSensitive: true))
            for (index, entry) in paths.enumerated() {
                let excluding = entry.hasPrefix("NOT ")
                let text = excluding ? String(entry.dropFirst(4)) : entry
                // iOS 9 patterns have no substitution variables: "$(" is literal text there.
                guard let pattern = try? LinkPattern(literalWildcards: text), pattern.matches(path) else { continue }
                return verdict(
                    excluding ? .excluded : .open, index: index, pattern: entry,
                    "\(url.path.printable) matches \"\(entry.printable)\"")
            }
        case .components:
            let settings = defaults.over(applinks.defaults)
            for component in components {
                let own = component.settings.over(settings)
                guard
                    component.matches(
                        url, variables: applinks.variableTable, caseSensitive: own.caseSensitive ?? true,
                        percentEncoded: own.percentEncoded ?? true)
                else { continue }
                return verdict(
                    component.exclude ? .excluded : .open, index: component.index, pattern: component.source,
                    "the link matches \(component.source)")
            }
        }
        return nil
    }

    private func verdict(_ outcome: LinkVerdict.Outcome, index: Int, pattern: String, _ why: String) -> LinkVerdict {
        let list = form == .components ? "components" : "paths"
        let rule = LinkRule(
            form: form, location: "\(location).\(list)[\(index)]", detail: self.index, index: index,
            pattern: pattern)
        let action = outcome == .open ? "opens the app" : "is excluded and opens in the browser"
        return LinkVerdict(outcome: outcome, rule: rule, reason: "\(why) at \(rule.location): the link \(action)")
    }

    /// The 2015 rule: `*` alone or a trailing `*` is a prefix match, anything else must equal the path exactly.
    static func match2015(_ pattern: String, _ path: String) -> Bool {
        if pattern.hasSuffix("*") { return path.utf8.starts(with: pattern.utf8.dropLast()) }
        return pattern == path
    }
}

extension LinkPattern {
    /// A pattern with `*` and `?` and no variables (the iOS 9 form).
    init(literalWildcards pattern: String) throws(AssociationFileError) {
        try self.init(pattern, variables: .none, caseSensitive: true, at: "", variablesAllowed: false)
    }
}

extension AppLinkComponent {
    func matches(
        _ url: LinkURL, variables: VariableTable, caseSensitive: Bool, percentEncoded: Bool
    ) -> Bool {
        func test(_ pattern: String?, _ value: String) -> Bool {
            guard let pattern else { return true }
            guard let compiled = try? LinkPattern(pattern, variables: variables, caseSensitive: caseSensitive, at: "")
            else { return false }
            let text = percentEncoded ? value : PercentDecoding.decode(value)
            return compiled.matches(LinkPattern.subject(text, caseSensitive: caseSensitive))
        }
        guard test(path, url.path), test(fragment, url.fragment ?? "") else { return false }
        switch query {
        case nil: return true
        case .whole(let pattern)?: return test(pattern, url.query ?? "")
        case .items(let items)?:
            let present = PercentDecoding.queryItems(url.query ?? "")
            for item in items {
                let wantedName = item.name
                let values = present.filter { name, _ in
                    let name = percentEncoded ? name : PercentDecoding.decode(name)
                    return caseSensitive
                        ? name == wantedName
                        : LinkPattern.subject(name, caseSensitive: false)
                            == LinkPattern.subject(wantedName, caseSensitive: false)
                }.map(\.value)
                for value in values.isEmpty ? [""] : values where !test(item.pattern, value) { return false }
            }
            return true
        }
    }
}

/// RFC 3986 §2.1 percent-decoding, and the query's `name=value` items split on `&` as `URLComponents.queryItems`
/// splits them (no `+` for space).
enum PercentDecoding {
    static func decode(_ text: String) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "%"), index + 2 < utf8.count,
                let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
            {
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The query's items as written; an item without `=` has the empty value.
    static func queryItems(_ query: String) -> [(name: String, value: String)] {
        query.split(separator: "&").map { item in
            guard let equals = item.firstIndex(of: "=") else { return (String(item), "") }
            return (String(item[..<equals]), String(item[item.index(after: equals)...]))
        }
    }
}
