extension DomainCheck {
    /// A check whose files are read by ``AppSiteAssociation``: approved when the file names `app` for `service`.
    public init(
        host: String, port: Int = 443, app: AppID, service: AssociatedService, policy: RetryPolicy = RetryPolicy()
    ) {
        self.init(host: host, port: port, app: app.description, service: service.rawValue, policy: policy) { json in
            Self.evaluate(json, app: app, service: service)
        }
    }

    /// What an `apple-app-site-association` file says for `app` and `service`.
    public static func evaluate(_ json: [UInt8], app: AppID, service: AssociatedService) -> FileEvaluation {
        let file: AppSiteAssociation
        do {
            file = try AppSiteAssociation(json: json)
        } catch {
            return .invalid(error.description)
        }
        guard let reason = file.reasonNotNamed(app: app, for: service) else { return .names }
        return .doesNotName(reason)
    }
}
