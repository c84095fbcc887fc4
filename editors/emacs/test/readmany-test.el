;;; readmany-test.el --- End-to-end tests of readmany.el -*- lexical-binding: t; -*-

;;; Commentary:

;; Runs the real server (no mocks):
;;
;;   emacs --batch -L editors/emacs -l editors/emacs/test/readmany-test.el \
;;         -f ert-run-tests-batch-and-exit
;;
;; The server command is $READMANY_CMD (a JSON array such as
;; ["readmany","serve","--stdio"]) or readmany.el's default (readmany lsp).
;; Workspaces are made under $READMANY_TEST_ROOT, else a new temp folder.
;; Eglot must be loadable (built in since Emacs 29; Debian 12: elpa-eglot):
;; run without -Q so that the distribution's site-start activates it.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'readmany)

(defvar readmany-test--base
  (let ((env (getenv "READMANY_TEST_ROOT")))
    (if (and env (not (string-empty-p env)))
        (progn (make-directory env t) (directory-file-name (expand-file-name env)))
      (directory-file-name (make-temp-file "readmany-el-test" t))))
  "Folder holding the test workspaces.")

(defvar readmany-test--tag (format "%d" (random 1000000000)))

(defun readmany-test--write (root rel text)
  "Write TEXT to REL under ROOT."
  (let ((path (expand-file-name rel root)))
    (make-directory (file-name-directory path) t)
    (with-temp-file path (insert text))
    path))

(defun readmany-test--workspace (name)
  "A fresh workspace NAME under the base folder; returns its path."
  (let ((root (expand-file-name name readmany-test--base)))
    (when (file-directory-p root) (delete-directory root t))
    (make-directory root t)
    (readmany-test--write root ".readmanyignore" "secret.txt\n")
    (readmany-test--write root "a.txt" (format "alpha DISK_%s\n" readmany-test--tag))
    (readmany-test--write root "sub/b.el" (format ";; EL_%s\n" readmany-test--tag))
    (readmany-test--write root "secret.txt" (format "SECRET_%s\n" readmany-test--tag))
    (directory-file-name root)))

(defun readmany-test--has (needle haystack)
  "Non-nil when HAYSTACK contains NEEDLE."
  (and (stringp haystack) (string-match-p (regexp-quote needle) haystack)))

(defun readmany-test--shared-daemon-p ()
  "Non-nil when the command is the bridge to the shared daemon."
  (equal (last (readmany--command)) '("lsp")))

(ert-deftest readmany-test-command-from-env ()
  (let ((process-environment (cons "READMANY_CMD=[\"/x/readmany\",\"serve\",\"--stdio\"]"
                                   process-environment))
        (readmany-command nil))
    (should (equal (readmany--command) '("/x/readmany" "serve" "--stdio"))))
  (let ((process-environment (cons "READMANY_CMD=" process-environment))
        (readmany-command nil))
    (should (equal (readmany--command) '("readmany" "lsp"))))
  (let ((readmany-command '("readmany" "serve" "--stdio")))
    (should (equal (readmany--command) '("readmany" "serve" "--stdio")))))

(ert-deftest readmany-test-parse-args ()
  (should (equal (readmany-parse-args '("a.txt" "format=xml" "lineNumbers=true"
                                        "exclude=x,y" "maxTotalFiles=3" "b=c"))
                 '(:paths ["a.txt" "b=c"] :format "xml" :lineNumbers t
                          :exclude ["x" "y"] :maxTotalFiles 3))))

(ert-deftest readmany-test-read ()
  "readmany-read: a real read over jsonrpc.el, shown in *readmany*."
  (let ((root (readmany-test--workspace "read")))
    (unwind-protect
        (let* ((default-directory (file-name-as-directory (expand-file-name "sub" root)))
               (_ (should (equal (readmany-root) root)))
               (result (readmany-read '("a.txt" "sub/b.el")))
               (llm (plist-get result :llmContent)))
          (should (readmany-test--has (concat "DISK_" readmany-test--tag) llm))
          (should (readmany-test--has (concat "EL_" readmany-test--tag) llm))
          (should (readmany-test--has "--- a.txt ---" llm))
          (should (equal (plist-get (aref (plist-get result :files) 0) :path) "a.txt"))
          (should (equal (plist-get (aref (plist-get result :files) 0) :status) "ok"))
          (should (eql (plist-get (plist-get result :summary) :read) 2))
          ;; The buffer shows llmContent verbatim.
          (with-current-buffer readmany-buffer-name
            (should (derived-mode-p 'readmany-result-mode))
            (should buffer-read-only)
            (should (equal (buffer-string) llm))
            (should (equal default-directory (file-name-as-directory root))))
          ;; Globs: .readmanyignore hides secret.txt.
          (let ((llm (plist-get (readmany-read '("**/*.txt")) :llmContent)))
            (should (readmany-test--has (concat "DISK_" readmany-test--tag) llm))
            (should-not (readmany-test--has "SECRET_" llm)))
          ;; KEY=VALUE words and PARAMS reach the server.
          (should (readmany-test--has
                   "<documents>"
                   (plist-get (readmany-read '("a.txt" "format=xml")) :llmContent)))
          (should (readmany-test--has
                   "1\t" (plist-get (readmany-read '("a.txt") '(:lineNumbers t))
                                    :llmContent)))
          ;; g in *readmany* asks again and sees a fresh disk write.
          (readmany-test--write root "a.txt" (format "alpha NEW_%s\n" readmany-test--tag))
          (readmany-read '("a.txt"))
          (readmany-test--write root "a.txt" (format "alpha NEWER_%s\n" readmany-test--tag))
          (with-current-buffer readmany-buffer-name
            (revert-buffer)
            (should (readmany-test--has (concat "NEWER_" readmany-test--tag) (buffer-string))))
          ;; Invalid params are a user-error naming the field.
          (let ((err (should-error (readmany-read nil '(:recursive t)) :type 'user-error)))
            (should (readmany-test--has "paths" (cadr err))))
          ;; readMany/files and readMany/status.
          (let ((files (readmany-files '("**"))))
            (should (member "a.txt" files))
            (should (member "sub/b.el" files))
            (should-not (member "secret.txt" files)))
          (should (plist-get (readmany-status) :pid)))
      (readmany-shutdown))
    (should (= 0 (hash-table-count readmany--connections)))))

(ert-deftest readmany-test-eglot-setup ()
  (require 'eglot)
  (let ((eglot-server-programs '((python-mode . ("pylsp")))))
    (readmany-eglot-setup '(markdown-mode org-mode))
    (should (equal (car eglot-server-programs)
                   '((markdown-mode org-mode) . readmany-eglot-contact)))
    (should (assq 'python-mode eglot-server-programs))
    (readmany-eglot-setup '(markdown-mode org-mode))
    (should (= 2 (length eglot-server-programs)))
    (let ((readmany-command '("readmany" "serve" "--stdio"))
          (readmany-initialization-options '(:format "xml")))
      (should (equal (readmany-eglot-contact)
                     '("readmany" "serve" "--stdio" :initializationOptions (:format "xml")))))))

(ert-deftest readmany-test-eglot ()
  "readmany as the Eglot server of a text buffer; custom methods on that connection."
  (should (require 'eglot nil t))
  (let* ((root (readmany-test--workspace "eglot"))
         (file (readmany-test--write root "notes.txt" "notes on disk\n"))
         (eglot-sync-connect t)
         (buf (find-file-noselect file))
         server)
    (unwind-protect
        (with-current-buffer buf
          (text-mode)
          ;; Unsaved text before the connection: it reaches the server in didOpen.
          (goto-char (point-max))
          (insert (format "UNSAVED_%s\n" readmany-test--tag))
          (readmany-eglot)
          (with-timeout (30 (ert-fail "Eglot did not connect within 30 s"))
            (while (not (eglot-current-server))
              (accept-process-output nil 0.05)))
          (setq server (eglot--current-server-or-lose))
          (let* ((result (jsonrpc-request server :readMany/read '(:paths ["notes.txt" "a.txt"])
                                          :timeout 30))
                 (llm (plist-get result :llmContent)))
            (should (readmany-test--has (concat "UNSAVED_" readmany-test--tag) llm))
            (should (readmany-test--has (concat "DISK_" readmany-test--tag) llm))
            (should (equal (plist-get (aref (plist-get result :files) 0) :source) "overlay")))
          (should (plist-get (jsonrpc-request server :readMany/status (make-hash-table)
                                              :timeout 30)
                             :pid))
          ;; A later edit, sent by readmany-eglot-read before it asks.
          (insert (format "LATER_%s\n" readmany-test--tag))
          (let ((llm (plist-get (readmany-eglot-read '("notes.txt")) :llmContent)))
            (should (readmany-test--has (concat "LATER_" readmany-test--tag) llm)))
          (with-current-buffer readmany-buffer-name
            (should (readmany-test--has (concat "LATER_" readmany-test--tag) (buffer-string))))
          ;; With the shared daemon another connection to the same root (readmany-read's
          ;; own) sees the buffer's unsaved text too (shareOverlays).
          (when (readmany-test--shared-daemon-p)
            (let ((llm (plist-get (readmany-read '("notes.txt") nil root) :llmContent)))
              (should (readmany-test--has (concat "LATER_" readmany-test--tag) llm)))))
      (when server
        (ignore-errors (eglot-shutdown server)))
      (readmany-shutdown)
      (with-current-buffer buf (set-buffer-modified-p nil))
      (kill-buffer buf))))

(provide 'readmany-test)
;;; readmany-test.el ends here
