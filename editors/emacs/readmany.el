;;; readmany.el --- Read many files at once through the readmany daemon -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The readmany authors

;; Author: The readmany authors
;; Maintainer: The readmany authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "27.1") (jsonrpc "1.0.9"))
;; Keywords: tools, convenience, files
;; SPDX-License-Identifier: MIT

;; This file is not part of GNU Emacs.

;;; Commentary:

;; readmany is a warm JSON-RPC daemon that answers batch "read many
;; files" requests (files, folders, globs; ignore rules; budgets) from
;; an in-memory index of a workspace.  This package talks to it:
;;
;; - `readmany-read' asks for files, folders or globs and shows the
;;   answer's `llmContent' (the framed text a model gets) in the buffer
;;   *readmany*.  It runs the server itself over the built-in jsonrpc.el
;;   (`readmany lsp', the bridge to the shared per-user daemon, by
;;   default; `readmany serve --stdio' for a private server), one
;;   connection per workspace root.
;; - `readmany-eglot' manages the current buffer with Eglot through
;;   readmany (so its unsaved text wins over disk for every reader of
;;   the root, agents included), and `readmany-eglot-contact' is an
;;   `eglot-server-programs' entry for the major modes you choose:
;;
;;     (with-eval-after-load 'eglot
;;       (add-to-list 'eglot-server-programs
;;                    '((markdown-mode org-mode) . readmany-eglot-contact)))
;;
;; Eglot is built into Emacs 29+; on Emacs 27/28 install it from GNU
;; ELPA or your distribution (Debian: elpa-eglot).  See README.md.

;;; Code:

(require 'cl-lib)
(require 'jsonrpc)
(require 'subr-x)
(require 'url-util)

(declare-function eglot "ext:eglot")
(declare-function eglot-current-server "ext:eglot")
(declare-function eglot--signal-textDocument/didChange "ext:eglot")
(declare-function json-read-from-string "json")
(declare-function project-root "ext:project")
(declare-function project-roots "ext:project")
(defvar eglot-server-programs)

;;;; Customization

(defgroup readmany nil
  "Read many files at once through the readmany daemon."
  :group 'tools
  :prefix "readmany-")

(defcustom readmany-command nil
  "Command that runs the readmany server (LSP framing on stdio).
nil means the value of the environment variable READMANY_CMD (a
JSON array such as [\"readmany\",\"serve\",\"--stdio\"], or a
shell-quoted command line) when it is set, else
\(\"readmany\" \"lsp\"): the bridge to the shared per-user daemon,
started when none runs.  (\"readmany\" \"serve\" \"--stdio\") runs
a private server per workspace root instead."
  :type '(choice (const :tag "Automatic ($READMANY_CMD, else readmany lsp)" nil)
                 (repeat :tag "Program and arguments" string)))

(defcustom readmany-initialization-options nil
  "Plist sent as LSP `initializationOptions'.
It holds settings (`:ignoreFileNames', `:denyPatterns',
`:maxFileBytes', ...) and per-connection ReadManyParams
defaults (`:format', `:perFileMaxLines', ...).  Vectors are JSON
arrays, `:json-false' is false.  Example:
  (:format \"xml\" :ignoreFileNames [\".readmanyignore\" \".aiignore\"])"
  :type 'plist)

(defcustom readmany-default-params nil
  "Plist of ReadManyParams merged under every `readmany-read' request.
Example: (:lineNumbers t :maxTotalFiles 50)."
  :type 'plist)

(defcustom readmany-root-markers '(".git" ".readmanyignore")
  "Files or folders whose nearest parent folder is the workspace root.
When none is found, the root is the current project (project.el)
or else `default-directory'."
  :type '(repeat string))

(defcustom readmany-root-function nil
  "Function of no arguments returning the workspace root, or nil.
When it returns a folder, `readmany-root-markers' are not consulted."
  :type '(choice (const :tag "Use root markers" nil) function))

(defcustom readmany-buffer-name "*readmany*"
  "Name of the buffer that shows the answer's `llmContent'."
  :type 'string)

(defcustom readmany-request-timeout 120
  "Seconds to wait for an answer (a first read indexes the root)."
  :type 'number)

(defcustom readmany-events-buffer-size 0
  "Size of each connection's JSON-RPC events buffer.
0 logs nothing (answers hold file contents); nil keeps everything."
  :type '(choice (const :tag "Unlimited" nil) integer))

;;;; Server command and root

(defun readmany--command ()
  "The server command as a list of strings (see `readmany-command')."
  (or readmany-command
      (let ((env (string-trim (or (getenv "READMANY_CMD") ""))))
        (cond ((string-empty-p env) nil)
              ((string-prefix-p "[" env)
               (if (fboundp 'json-parse-string)
                   (json-parse-string env :array-type 'list)
                 (require 'json)
                 (append (json-read-from-string env) nil)))
              (t (split-string-and-unquote env))))
      (list "readmany" "lsp")))

(defun readmany--project-root ()
  "The root of the current project.el project, or nil."
  (when (and (require 'project nil t) (fboundp 'project-current))
    (when-let ((pr (project-current)))
      (if (fboundp 'project-root) (project-root pr) (car (project-roots pr))))))

(defun readmany-root (&optional dir)
  "The workspace root for DIR (default: `default-directory').
`readmany-root-function', then the nearest folder holding one of
`readmany-root-markers', then the project.el root, then DIR."
  (let* ((dir (expand-file-name (or dir default-directory)))
         (root (or (and readmany-root-function
                        (let ((default-directory (file-name-as-directory dir)))
                          (funcall readmany-root-function)))
                   (locate-dominating-file
                    dir (lambda (d)
                          (cl-some (lambda (m) (file-exists-p (expand-file-name m d)))
                                   readmany-root-markers)))
                   (let ((default-directory (file-name-as-directory dir)))
                     (readmany--project-root))
                   dir)))
    (directory-file-name (expand-file-name root))))

(defun readmany--uri (path)
  "The file: URI of PATH."
  (concat "file://" (url-hexify-string (expand-file-name path) url-path-allowed-chars)))

;;;; Connections (jsonrpc.el)

(defvar readmany--connections (make-hash-table :test #'equal)
  "Workspace root -> live `jsonrpc-process-connection'.")

(defun readmany--handle-notification (_conn method params)
  "Show the server's warnings and errors (METHOD, PARAMS) as messages."
  (when (eq method 'window/showMessage)
    (let ((type (plist-get params :type)))
      (when (and (numberp type) (<= type 2))
        (message "readmany: %s" (plist-get params :message))))))

(defun readmany--handle-request (_conn method _params)
  "Answer the server's request METHOD (nothing is needed from Emacs)."
  (pcase method
    ((or 'window/workDoneProgress/create 'client/registerCapability
         'client/unregisterCapability)
     nil)
    ('workspace/configuration [])
    (_ (jsonrpc-error :code -32601 :message (format "%s is not supported" method)))))

(defun readmany--stderr-tail (conn)
  "The last lines the server of CONN wrote on stderr, or nil."
  (accept-process-output nil 0.1)
  (let ((buf (and (fboundp 'jsonrpc-stderr-buffer)
                  (ignore-errors (jsonrpc-stderr-buffer conn)))))
    (when (buffer-live-p buf)
      (with-current-buffer buf
        (let ((text (string-trim (buffer-substring-no-properties
                                  (max (point-min) (- (point-max) 2000)) (point-max)))))
          (unless (string-empty-p text) text))))))

(defun readmany--connect (root)
  "Start the readmany server for ROOT and initialize it; return the connection."
  (let* ((command (readmany--command))
         (name (format "readmany[%s]" root))
         (program (car command)))
    (unless (or (file-name-absolute-p program) (executable-find program))
      (user-error "readmany: `%s' not found: install readmany-daemon \
\(pip install . in its checkout) or set `readmany-command'" program))
    (let* ((default-directory (file-name-as-directory root))
           (conn (make-instance
                  'jsonrpc-process-connection
                  :name name
                  :events-buffer-scrollback-size readmany-events-buffer-size
                  :notification-dispatcher #'readmany--handle-notification
                  :request-dispatcher #'readmany--handle-request
                  :process (lambda ()
                             (make-process
                              :name name
                              :command command
                              :connection-type 'pipe
                              :coding 'utf-8-emacs-unix
                              :noquery t
                              ;; jsonrpc.el expects exactly this stderr buffer name.
                              :stderr (get-buffer-create (format "*%s stderr*" name))
                              :file-handler nil)))))
      (condition-case err
          (progn
            (jsonrpc-request
             conn :initialize
             (list :processId (emacs-pid)
                   :clientInfo (list :name "readmany.el" :version "0.1.0")
                   :rootPath root
                   :rootUri (readmany--uri root)
                   :workspaceFolders (vector (list :uri (readmany--uri root) :name root))
                   :capabilities (make-hash-table)
                   :initializationOptions (or readmany-initialization-options
                                              (make-hash-table)))
             :timeout readmany-request-timeout)
            (jsonrpc-notify conn :initialized (make-hash-table)))
        (error
         (let ((stderr (readmany--stderr-tail conn)))
           (ignore-errors (jsonrpc-shutdown conn))
           (error "readmany: `%s' did not start: %s%s"
                  (mapconcat #'identity command " ")
                  (or (alist-get 'jsonrpc-error-message (cdr err))
                      (error-message-string err))
                  (if stderr (concat "\n" stderr) "")))))
      conn)))

(defun readmany-connection (&optional root)
  "The live readmany connection for ROOT, started if needed.
ROOT defaults to `readmany-root'."
  (let* ((root (if root (directory-file-name (expand-file-name root)) (readmany-root)))
         (conn (gethash root readmany--connections)))
    (if (and conn (jsonrpc-running-p conn))
        conn
      (puthash root (readmany--connect root) readmany--connections))))

(defun readmany--stop (conn)
  "Shut CONN down politely (shutdown, exit), then make sure its process is gone."
  (when (jsonrpc-running-p conn)
    (ignore-errors (jsonrpc-request conn :shutdown nil :timeout 3))
    (ignore-errors (jsonrpc-notify conn :exit nil))
    (with-timeout (3 nil)
      (while (jsonrpc-running-p conn)
        (accept-process-output nil 0.05))))
  (ignore-errors (jsonrpc-shutdown conn t)))

;;;###autoload
(defun readmany-shutdown (&optional root)
  "Stop the readmany connections (all, or the one of ROOT).
With `readmany lsp' the shared daemon keeps running for other
clients; `readmany stop' in a shell stops it."
  (interactive)
  (let ((root (and root (directory-file-name (expand-file-name root)))))
    (maphash (lambda (r conn)
               (when (or (null root) (equal r root))
                 (readmany--stop conn)
                 (remhash r readmany--connections)))
             readmany--connections)))

(add-hook 'kill-emacs-hook #'readmany-shutdown)

(defun readmany-request (method params &optional root)
  "Send METHOD (a keyword such as :readMany/read) with PARAMS (a plist).
ROOT is the workspace root (default: `readmany-root').  Returns the
result as a plist; a JSON-RPC error signals `user-error' for
invalid params (-32602), `error' otherwise."
  (let ((conn (readmany-connection root)))
    (condition-case err
        (jsonrpc-request conn method (or params (make-hash-table))
                         :timeout readmany-request-timeout)
      (jsonrpc-error
       (let ((code (alist-get 'jsonrpc-error-code (cdr err)))
             (msg (or (alist-get 'jsonrpc-error-message (cdr err)) (format "%S" err))))
         (if (eql code -32602)
             (user-error "readmany: %s" msg)
           (error "readmany: %s" msg)))))))

;;;; Parameters

(defconst readmany--param-keys
  '("recursive" "useDefaultExcludes" "perFileMaxLines" "per_file_max_lines"
    "perFileMaxChars" "per_file_max_chars" "maxTotalFiles" "max_total_files"
    "maxTotalChars" "max_total_chars" "preferFullRead" "prefer_full_read" "packing"
    "stopOnError" "format" "lineNumbers" "absolutePaths" "root" "sync" "cursor"
    "include" "exclude" "respect_git_ignore" "respect_sii_ignore")
  "ReadManyParams names accepted as KEY=VALUE words by `readmany-read'.")

(defun readmany--merge-params (&rest plists)
  "Merge PLISTS left to right (later values win) into a new plist."
  (let (out)
    (dolist (pl plists)
      (cl-loop for (k v) on pl by #'cddr do (setq out (plist-put out k v))))
    out))

(defun readmany-parse-args (words)
  "Return the ReadManyParams plist of WORDS (KEY=VALUE: a parameter).
Values true/false/integers are converted; include=a,b and
exclude=a,b give arrays.  Every other word is a path, folder or glob."
  (let (paths params)
    (dolist (w words)
      (if (and (string-match "\\`\\([A-Za-z_]+\\)=\\(.*\\)\\'" w)
               (member (match-string 1 w) readmany--param-keys))
          (let* ((k (match-string 1 w)) (v (match-string 2 w))
                 (val (cond ((member k '("include" "exclude"))
                             (vconcat (split-string v "," t)))
                            ((equal v "true") t)
                            ((equal v "false") :json-false)
                            ((string-match-p "\\`-?[0-9]+\\'" v) (string-to-number v))
                            (t v))))
            (setq params (plist-put params (intern (concat ":" k)) val)))
        (push w paths)))
    (if paths (append (list :paths (vconcat (nreverse paths))) params) params)))

;;;; Showing answers

(defvar-local readmany--last-request nil
  "(PARAMS . ROOT) of the answer shown in this buffer.")

(define-derived-mode readmany-result-mode special-mode "ReadMany"
  "Major mode of the *readmany* buffer: the `llmContent' of an answer.
\\<readmany-result-mode-map>\\[revert-buffer] asks again (fresh \
content), \\[quit-window] quits."
  (setq-local revert-buffer-function #'readmany--revert)
  (setq-local truncate-lines nil))

(defun readmany--revert (&rest _)
  "Ask again for the answer shown in this buffer."
  (if readmany--last-request
      (readmany-read nil (car readmany--last-request) (cdr readmany--last-request))
    (user-error "readmany: nothing to refresh")))

(defun readmany--summary (result)
  "The first line of RESULT's returnDisplay, without markdown emphasis."
  (let ((display (or (plist-get result :returnDisplay) "")))
    (replace-regexp-in-string "\\*\\*" "" (car (split-string display "\n")))))

(defun readmany-show (result &optional params root)
  "Show RESULT's `llmContent' in `readmany-buffer-name'; return the buffer.
PARAMS and ROOT are remembered so that \\[revert-buffer] asks again."
  (let ((buf (get-buffer-create readmany-buffer-name)))
    (with-current-buffer buf
      (unless (derived-mode-p 'readmany-result-mode)
        (readmany-result-mode))
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (or (plist-get result :llmContent) ""))
        (goto-char (point-min)))
      (set-buffer-modified-p nil)
      (when root
        (setq default-directory (file-name-as-directory root)))
      (setq readmany--last-request (cons params root)))
    (display-buffer buf)
    (message "readmany: %s" (readmany--summary result))
    buf))

;;;; Commands

(defvar readmany-history nil "History of `readmany-read' inputs.")

(defun readmany--read-args ()
  "Prompt for `readmany-read' arguments."
  (let* ((default (and buffer-file-name
                       (file-relative-name buffer-file-name
                                           (file-name-as-directory (readmany-root)))))
         (input (read-string
                 (format "Read many (files, folders, globs, key=value)%s: "
                         (if default (format " [%s]" default) ""))
                 nil 'readmany-history default)))
    (list (split-string-and-unquote input))))

;;;###autoload
(defun readmany-read (patterns &optional params root)
  "Read PATTERNS (files, folders or globs) and show the answer.
PATTERNS is a list of strings (or one string); interactively, words
where KEY=VALUE sets a ReadManyParams field (format=xml,
lineNumbers=true, exclude=a,b).  PARAMS is a ReadManyParams plist
merged over `readmany-default-params'; ROOT the workspace
root (default: `readmany-root').  Sends readMany/read, shows the
answer's `llmContent' in the buffer *readmany* and returns the
ReadManyResult as a plist."
  (interactive (readmany--read-args))
  (let* ((patterns (if (stringp patterns) (list patterns) patterns))
         (root (if root (directory-file-name (expand-file-name root)) (readmany-root)))
         (params (readmany--merge-params readmany-default-params params
                                         (readmany-parse-args patterns)))
         (result (readmany-request :readMany/read params root)))
    (readmany-show result params root)
    result))

;;;###autoload
(defun readmany-files (&optional patterns root)
  "List the files readmany sees under ROOT matching PATTERNS; return their paths."
  (interactive (list (split-string-and-unquote
                      (read-string "List files (globs, empty for all): "))))
  (let* ((patterns (if (stringp patterns) (list patterns) patterns))
         (result (readmany-request :readMany/files
                                   (if patterns (list :patterns (vconcat patterns))
                                     (make-hash-table))
                                   root))
         (paths (mapcar (lambda (f) (plist-get f :path))
                        (append (plist-get result :files) nil))))
    (when (called-interactively-p 'interactive)
      (readmany-show (list :llmContent (mapconcat #'identity paths "\n")
                           :returnDisplay (format "%d file(s)" (length paths)))))
    paths))

;;;###autoload
(defun readmany-status (&optional root)
  "Show and return the readMany/status of ROOT's connection."
  (interactive)
  (let ((status (readmany-request :readMany/status nil root)))
    (when (called-interactively-p 'interactive)
      (message "readmany: pid %s, %s root(s), up %s s"
               (plist-get status :pid) (length (plist-get status :roots))
               (plist-get status :uptime)))
    status))

;;;; Eglot

(defun readmany-eglot-contact (&optional _interactive)
  "CONTACT for `eglot-server-programs': the readmany command.
With `readmany-initialization-options' it is followed by
:initializationOptions.  Eglot manages one server per major mode
and project, so an entry replaces any other server for its modes:
pick modes without one (text, markdown, org, ...), or use
`readmany-eglot' for one buffer."
  (append (readmany--command)
          (when readmany-initialization-options
            (list :initializationOptions readmany-initialization-options))))

;;;###autoload
(defun readmany-eglot-setup (modes)
  "Add an `eglot-server-programs' entry running readmany for MODES.
MODES is a major mode or a list of them; this takes them over from
any other server (see `readmany-eglot-contact')."
  (require 'eglot)
  (let ((entry (cons (if (listp modes) modes (list modes)) #'readmany-eglot-contact)))
    (setq eglot-server-programs (cons entry (delete entry eglot-server-programs)))))

;;;###autoload
(defun readmany-eglot ()
  "Manage this buffer's major mode in this project through readmany.
Starts Eglot with readmany as the server; `eglot-server-programs'
is left as it is.  The buffers of that mode in the project get
readmany as their server until `eglot-shutdown'."
  (interactive)
  (unless buffer-file-name
    (user-error "readmany-eglot: visit a file first"))
  (unless (require 'eglot nil t)
    (user-error "readmany-eglot: Eglot is missing (built in since Emacs 29; \
install it from GNU ELPA, or apt-get install elpa-eglot)"))
  (let ((eglot-server-programs (cons (cons (list major-mode) #'readmany-eglot-contact)
                                     eglot-server-programs))
        (current-prefix-arg nil))
    (call-interactively #'eglot)))

;;;###autoload
(defun readmany-eglot-read (patterns &optional params)
  "Like `readmany-read' (PATTERNS, PARAMS), through this buffer's Eglot.
The current buffer's Eglot server must be readmany (see
`readmany-eglot'); its unsaved text is sent first."
  (interactive (readmany--read-args))
  (unless (and (require 'eglot nil t) (eglot-current-server))
    (user-error "readmany-eglot-read: no Eglot server manages this buffer"))
  (when (fboundp 'eglot--signal-textDocument/didChange)
    (with-demoted-errors "readmany: %S" (eglot--signal-textDocument/didChange)))
  (let* ((patterns (if (stringp patterns) (list patterns) patterns))
         (params (readmany--merge-params readmany-default-params params
                                         (readmany-parse-args patterns)))
         (result (jsonrpc-request (eglot-current-server) :readMany/read params
                                  :timeout readmany-request-timeout)))
    (readmany-show result params)
    result))

(provide 'readmany)
;;; readmany.el ends here
