import JSON

/// An `apple-app-site-association` file: which apps the domain names for each service, and the universal-link
/// patterns of each app.
///
/// Read from the JSON a site serves at `/.well-known/apple-app-site-association` (the CMS-signed form carries the
/// same JSON inside). Sources for the schema, quoted in the comments where a rule comes from one of them:
/// - Apple, "applinks" and its children in Bundle Resources:
///   https://developer.apple.com/documentation/bundleresources/applinks (`details`, `defaults`,
///   `substitutionVariables`, `Details.Components`, `Components.Query`).
/// - WWDC 2015 session 509 "Seamless Linking to Your App" (the 2015 `details` dictionary keyed by app ID) and WWDC
///   2019 session 717 "What's New in Universal Links" (`appIDs`, `components`, query dictionaries, `exclude`).
/// - The older "Support Universal Links" guide (iOS 9–12 `appID` + `paths`; `NOT ` from iOS 9.2, see
///   https://forums.developer.apple.com/thread/24981).
///
/// Members this type does not know are ignored, as the system ignores them; a known member of the wrong type is
/// an `AssociationFileError` naming its JSON path.
public struct AppSiteAssociation: Hashable, Sendable {
    /// The largest file read: 128 KB, the limit Apple's CDN applies to association files.
    public static let maximumBytes = 128 * 1024

    /// `webcredentials.apps`, nil when the file has no `webcredentials` section.
    public var webcredentials: [String]?
    /// `activitycontinuation.apps`, nil when the section is absent.
    public var activitycontinuation: [String]?
    /// `appclips.apps`, nil when the section is absent.
    public var appclips: [String]?
    /// The universal links section, nil when absent.
    public var applinks: AppLinks?

    /// Reads the file's JSON.
    public init(json: [UInt8]) throws(AssociationFileError) {
        let root = try JSONObject(
            AssociationJSON.parse(json, maximumBytes: Self.maximumBytes, what: "association file"), path: "")
        webcredentials = try Self.apps(root, "webcredentials")
        activitycontinuation = try Self.apps(root, "activitycontinuation")
        appclips = try Self.apps(root, "appclips")
        applinks = try root.object("applinks").map { (section) throws(AssociationFileError) in
            try AppLinks(section)
        }
    }

    private static func apps(_ root: JSONObject, _ key: String) throws(AssociationFileError) -> [String]? {
        guard let section = try root.object(key) else { return nil }
        return try section.strings("apps") ?? []
    }

    /// The app IDs the file lists for `service`, in file order, without repeats.
    public func apps(for service: AssociatedService) -> [String] {
        let listed: [String]
        switch service {
        case .webcredentials: listed = webcredentials ?? []
        case .activitycontinuation: listed = activitycontinuation ?? []
        case .appclips: listed = appclips ?? []
        case .applinks: listed = applinks?.details.flatMap(\.appIDs) ?? []
        }
        var seen = Set<String>()
        return listed.filter { seen.insert($0).inserted }
    }

    /// Whether the file names `app` for `service`: its `apps` array lists the app ID exactly (for `applinks`, a
    /// detail names it). Whether a URL opens the app is `match(url:app:domain:)`.
    public func names(app: AppID, for service: AssociatedService) -> Bool {
        apps(for: service).contains(app.description)
    }

    /// Why the file does not name `app` for `service`, nil when it does: the section is missing, or the list is
    /// empty, or the app is listed with another team ID or in another case, or not at all.
    public func reasonNotNamed(app: AppID, for service: AssociatedService) -> String? {
        if names(app: app, for: service) { return nil }
        let sectionPresent: Bool =
            switch service {
            case .webcredentials: webcredentials != nil
            case .activitycontinuation: activitycontinuation != nil
            case .appclips: appclips != nil
            case .applinks: applinks != nil
            }
        let list = service == .applinks ? "no applinks detail" : "\(service).apps"
        guard sectionPresent else { return "the file has no \(service) section" }
        let listed = apps(for: service)
        guard !listed.isEmpty else {
            return service == .applinks ? "applinks.details names no app" : "\(list) is empty"
        }
        let wanted = app.description
        if let other = listed.first(where: { $0.lowercased() == wanted.lowercased() }) {
            return "\(list) lists \"\(other.printable)\", which differs from \(wanted) in case (app IDs compare "
                + "exactly)"
        }
        let sameBundle = listed.filter { $0.split(separator: ".", maxSplits: 1).last.map(String.init) == app.bundleID }
        if !sameBundle.isEmpty {
            let names = sameBundle.prefix(3).map { "\"\($0.printable)\"" }.joined(separator: ", ")
            return "\(list) lists \(app.bundleID) only under another team ID (\(names)), not \(app.teamID)"
        }
        let shown = listed.prefix(5).map { "\"\($0.printable)\"" }.joined(separator: ", ")
        let more = listed.count > 5 ? " and \(listed.count - 5) more" : ""
        return service == .applinks
            ? "no applinks detail names \(wanted) (the file names \(shown)\(more))"
            : "\(list) does not list \(wanted) (it lists \(shown)\(more))"
    }
}

/// Which of the three historical shapes a universal-link rule is written in.
public enum AppLinksForm: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// iOS 9.0 (WWDC 2015): `details` is an object keyed by app ID, each with `paths`; a path is exact or ends in
    /// `*` for a prefix.
    case dictionary2015 = "2015"
    /// iOS 9–12: `details` is an array of `{appID, paths}`; paths use `*` and `?` and may start with `NOT `.
    case paths = "ios9"
    /// iOS 13 and later: `details` is an array of `{appIDs, components}`.
    case components = "ios13"

    public var description: String {
        switch self {
        case .dictionary2015: "2015 details dictionary"
        case .paths: "iOS 9 paths"
        case .components: "iOS 13 components"
        }
    }
}

/// The `applinks` section.
public struct AppLinks: Hashable, Sendable {
    /// The details in file order (for the 2015 dictionary, in the order its keys appear).
    public var details: [AppLinkDetail]
    /// `applinks.defaults`: settings for every component of the domain (iOS 14 and later).
    public var defaults: MatchingDefaults
    /// `applinks.substitutionVariables`: the file's own variables, each a list of strings (iOS 13.5 and later).
    public var substitutionVariables: [String: [String]]
    /// The variables compiled for matching.
    let variableTable: VariableTable

    /// The most matching steps per character of a link that all the file's patterns may take together.
    public static let maximumTotalCost = 131_072

    init(_ section: JSONObject) throws(AssociationFileError) {
        defaults =
            try section.object("defaults").map { (object) throws(AssociationFileError) in
                try MatchingDefaults(object)
            } ?? MatchingDefaults()
        var variables: [String: [String]] = [:]
        if let object = try section.object("substitutionVariables") {
            for member in object.members {
                // Apple: names "can contain any character except `$`, `(`, and `)`"; values can contain `?` and
                // `*` "but not other substitution variables".
                let path = object.path(member.key)
                guard !member.key.isEmpty, !member.key.contains(where: { "$()".contains($0) }) else {
                    throw AssociationFileError(
                        .wrongType, path: path,
                        "\(path): a substitution variable's name must not be empty or contain $, ( or )")
                }
                guard let values = try object.strings(member.key) else { continue }
                for (index, value) in values.enumerated() where value.contains("$(") {
                    let valuePath = AssociationJSON.path(path, index)
                    throw AssociationFileError(
                        .wrongType, path: valuePath,
                        "\(valuePath): a substitution variable's value cannot use another variable")
                }
                variables[member.key] = values
            }
        }
        substitutionVariables = variables
        let table = VariableTable(variables)
        variableTable = table
        var budget = Self.maximumTotalCost

        details = []
        guard let detailsValue = section.value("details") else { return }
        let detailsPath = section.path("details")
        switch detailsValue {
        case .object(let members):
            // WWDC 2015: "details": { "9JA89QQLNQ.com.apple.wwdc": { "paths": [...] } }
            for (index, member) in members.enumerated() {
                let entry = try JSONObject(member.value, path: AssociationJSON.path(detailsPath, member.key))
                details.append(
                    AppLinkDetail(
                        index: index, location: entry.path, appIDs: [member.key], form: .dictionary2015,
                        paths: try entry.strings("paths") ?? [], components: [], defaults: MatchingDefaults()))
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                details.append(
                    try AppLinkDetail(
                        JSONObject(element, path: AssociationJSON.path(detailsPath, index)), index: index,
                        variables: table, budget: &budget))
            }
        default:
            throw AssociationJSON.wrongType(detailsPath, detailsValue, expected: "an array or an object")
        }
    }
}

/// The matching settings `defaults` sets for the domain or for one detail, and a component can set for itself.
/// Apple: "The more specific definition overrides the less specific."
public struct MatchingDefaults: Hashable, Sendable {
    /// Whether patterns compare letters case-sensitively; nil when not set here (the system default is true).
    public var caseSensitive: Bool?
    /// Whether patterns are written percent-encoded, as URLs carry them; nil when not set here (default true).
    public var percentEncoded: Bool?

    public init(caseSensitive: Bool? = nil, percentEncoded: Bool? = nil) {
        self.caseSensitive = caseSensitive
        self.percentEncoded = percentEncoded
    }

    init(_ object: JSONObject) throws(AssociationFileError) {
        caseSensitive = try object.bool("caseSensitive")
        percentEncoded = try object.bool("percentEncoded")
    }

    /// These settings where set, `fallback` elsewhere.
    func over(_ fallback: MatchingDefaults) -> MatchingDefaults {
        MatchingDefaults(
            caseSensitive: caseSensitive ?? fallback.caseSensitive,
            percentEncoded: percentEncoded ?? fallback.percentEncoded)
    }
}

/// One entry of `applinks.details`: the apps it names and their patterns.
public struct AppLinkDetail: Hashable, Sendable {
    /// Its position in `details`.
    public var index: Int
    /// Its JSON path, `applinks.details[1]` (or `applinks.details["ABCDE12345.com.example.app"]` in the 2015 form).
    public var location: String
    /// The app IDs it names: the 2015 key, `appID`, and `appIDs`, as written (not validated: a malformed one simply
    /// names no app).
    public var appIDs: [String]
    /// The shape its patterns are in: `components` when present (iOS 13 ignores `paths` then), else `paths`.
    public var form: AppLinksForm
    /// `paths` in the 2015 and iOS 9 forms.
    public var paths: [String]
    /// `components` in the iOS 13 form.
    public var components: [AppLinkComponent]
    /// The detail's own `defaults`.
    public var defaults: MatchingDefaults

    init(
        index: Int, location: String, appIDs: [String], form: AppLinksForm, paths: [String],
        components: [AppLinkComponent], defaults: MatchingDefaults
    ) {
        self.index = index
        self.location = location
        self.appIDs = appIDs
        self.form = form
        self.paths = paths
        self.components = components
        self.defaults = defaults
    }

    init(_ object: JSONObject, index: Int, variables: VariableTable, budget: inout Int) throws(AssociationFileError) {
        self.index = index
        location = object.path
        var apps: [String] = []
        if let single = try object.string("appID") { apps.append(single) }
        for app in try object.strings("appIDs") ?? [] where !apps.contains(app) { apps.append(app) }
        appIDs = apps
        defaults =
            try object.object("defaults").map { (object) throws(AssociationFileError) in
                try MatchingDefaults(object)
            } ?? MatchingDefaults()
        paths = try object.strings("paths") ?? []
        if let elements = try object.array("components") {
            form = .components
            var components: [AppLinkComponent] = []
            for (componentIndex, element) in elements.enumerated() {
                components.append(
                    try AppLinkComponent(
                        JSONObject(element, path: AssociationJSON.path(object.path("components"), componentIndex)),
                        index: componentIndex, source: element, variables: variables, budget: &budget))
            }
            self.components = components
        } else {
            form = .paths
            components = []
        }
    }
}

/// One entry of a detail's `components`: patterns for the URL's path, query and fragment. An absent pattern
/// matches anything (Apple: "The default is `*`, which matches everything").
public struct AppLinkComponent: Hashable, Sendable {
    /// The pattern for the query: one pattern for the whole query text, or a pattern per query item name.
    public enum Query: Hashable, Sendable {
        case whole(String)
        case items([(name: String, pattern: String)])

        public static func == (lhs: Query, rhs: Query) -> Bool {
            switch (lhs, rhs) {
            case (.whole(let a), .whole(let b)): a == b
            case (.items(let a), .items(let b)):
                a.count == b.count && zip(a, b).allSatisfy { $0.name == $1.name && $0.pattern == $1.pattern }
            default: false
            }
        }

        public func hash(into hasher: inout Hasher) {
            switch self {
            case .whole(let text): hasher.combine(text)
            case .items(let items):
                for item in items {
                    hasher.combine(item.name)
                    hasher.combine(item.pattern)
                }
            }
        }
    }

    /// Its position in `components`.
    public var index: Int
    /// `/`: the pattern for the path.
    public var path: String?
    /// `?`: the pattern for the query.
    public var query: Query?
    /// `#`: the pattern for the fragment.
    public var fragment: String?
    /// `exclude`: a match means "do not open the app", and matching stops.
    public var exclude: Bool
    /// `caseSensitive` and `percentEncoded` set on this component.
    public var settings: MatchingDefaults
    /// `comment`, which the system ignores.
    public var comment: String?
    /// The component as written, one line of JSON, for showing which rule decided.
    public var source: String

    init(_ object: JSONObject, index: Int, source: JSONValue, variables: VariableTable, budget: inout Int)
        throws(AssociationFileError)
    {
        self.index = index
        path = try object.string("/")
        fragment = try object.string("#")
        switch object.value("?") {
        case nil: query = nil
        case .string(let text)?: query = .whole(text)
        case .object(let members)?:
            var items: [(name: String, pattern: String)] = []
            for member in members {
                guard case .string(let pattern) = member.value else {
                    throw AssociationJSON.wrongType(
                        AssociationJSON.path(object.path("?"), member.key), member.value, expected: "a string")
                }
                items.append((member.key, pattern))
            }
            query = .items(items)
        case let other?:
            throw AssociationJSON.wrongType(object.path("?"), other, expected: "a string or an object")
        }
        exclude = try object.bool("exclude") ?? false
        settings = try MatchingDefaults(object)
        comment = try object.string("comment")
        self.source = String(decoding: source.serialized(), as: UTF8.self)
        // Compile every pattern now, so that a bad variable or an oversized expansion is a file error, not a
        // surprise at match time; the case setting does not change the cost.
        var patterns: [(String, String)] = []
        if let path { patterns.append((object.path("/"), path)) }
        if let fragment { patterns.append((object.path("#"), fragment)) }
        switch query {
        case .whole(let pattern)?: patterns.append((object.path("?"), pattern))
        case .items(let items)?:
            patterns += items.map { (AssociationJSON.path(object.path("?"), $0.name), $0.pattern) }
        case nil: break
        }
        for (location, pattern) in patterns {
            budget -= try LinkPattern(pattern, variables: variables, caseSensitive: true, at: location).cost
            guard budget >= 0 else {
                throw AssociationFileError(
                    .tooLarge, path: location,
                    "\(location): the file's patterns together expand to more than \(AppLinks.maximumTotalCost) "
                        + "tokens with their variables")
            }
        }
    }
}
