extension Int {
    /// The count and the noun, plural unless the count is 1: "1 passkey", "2 passkeys", "0 passkeys".
    /// `plural` is for nouns that do not take an "s" ("entry", "entries").
    public func counted(_ singular: String, plural: String? = nil) -> String {
        "\(self) \(self == 1 ? singular : plural ?? singular + "s")"
    }
}
